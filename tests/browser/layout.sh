#!/usr/bin/env bash
# Lays out a stormrig report in headless Chromium at a given width (default 1400 px, the
# width the report is made to fit) and fails when anything does not fit: a table or panel
# that scrolls sideways, a page wider than the window, or two chart labels drawn over each
# other. The report itself carries no test code: a copy of it gets the probe
# (tests/browser/layout-probe.js), which writes what it found into <html data-layout>.
#
#   tests/browser/layout.sh REPORT.html [WIDTH]
set -euo pipefail

[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 REPORT.html [WIDTH]" >&2; exit 2; }
report=$1
width=${2:-1400}
[[ -f $report ]] || { echo "layout.sh: no such file: $report" >&2; exit 2; }
chromium=${CHROMIUM:-$(command -v chromium || echo /usr/bin/chromium)}
[[ -x $chromium ]] || { echo "layout.sh: chromium not found (tests/run.sh installs it)" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$report" "$here/layout-probe.js" "$work/probed.html" <<'PY'
import sys
page, probe, out = sys.argv[1:]
text = open(page, encoding="utf-8").read()
script = "<script>" + open(probe, encoding="utf-8").read() + "</script></head>"
assert "</head>" in text, "no </head> in the report"
open(out, "w", encoding="utf-8").write(text.replace("</head>", script, 1))
PY
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --hide-scrollbars --mute-audio --virtual-time-budget=3000 \
    --user-data-dir="$work/profile" --window-size="$width,4000" \
    --dump-dom "file://$work/probed.html" >"$work/dom.html" 2>"$work/log" || {
    echo "layout.sh: chromium failed" >&2
    tail -n 20 "$work/log" >&2
    exit 1
}
found=$(python3 - "$work/dom.html" <<'PY'
import html, re, sys
m = re.search(r'data-layout="([^"]*)"', open(sys.argv[1], encoding="utf-8").read())
print(html.unescape(m.group(1)) if m else "")
PY
)
if [[ -z $found ]]; then
    echo "layout.sh: FAIL: the probe wrote nothing (did the page load?)" >&2
    exit 1
fi
if [[ $found != clean ]]; then
    echo "layout.sh: FAIL at $width px: $report" >&2
    tr '|' '\n' <<<"$found" | sed 's/^ */  /' >&2
    exit 1
fi
echo "layout.sh: OK at $width px: $report"
