addEventListener('load', function () {
  var bad = [];
  var name = function (e) { return e.id || (e.closest('[id]') || {}).id + '>' + (e.className.baseVal !== undefined ? 'svg' : e.className || e.tagName); };
  document.querySelectorAll('.tablewrap, figure, section, main, .card, details, pre').forEach(function (e) {
    if (e.scrollWidth > e.clientWidth + 1) bad.push('overflow ' + name(e) + ' ' + e.scrollWidth + '>' + e.clientWidth);
  });
  if (document.documentElement.scrollWidth > innerWidth) bad.push('page ' + document.documentElement.scrollWidth + '>' + innerWidth);
  document.querySelectorAll('svg').forEach(function (s) {
    var r = Array.prototype.map.call(s.querySelectorAll('text'), function (t) { return [t, t.getBoundingClientRect()]; })
      .filter(function (x) { return x[1].width > 0 && (x[0].textContent || '').trim() !== ''; });
    for (var i = 0; i < r.length; i++) for (var j = i + 1; j < r.length; j++) {
      var a = r[i][1], b = r[j][1];
      var w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 1 && h > 1) bad.push('overprint ' + name(s.closest('figure') || s) + ' "' + r[i][0].textContent + '" / "' + r[j][0].textContent + '"');
    }
  });
  document.documentElement.setAttribute('data-layout', bad.length ? bad.join(' | ') : 'clean');
});
