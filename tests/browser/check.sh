#!/usr/bin/env bash
# Opens a stormrig report in headless Chromium, offline, from its file URL; saves a
# screenshot; fails when the page logged any console error or uncaught exception.
#
#   tests/browser/check.sh REPORT.html [SCREENSHOT.png]
#
# Two independent signals, both must be clean:
#   1. the DOM Chromium dumps after load: the page's inline recorder counts uncaught errors,
#      unhandled rejections, console.error calls and CSP violations into
#      <html data-errors="N">; N must be 0 (and the attribute must be there at all);
#   2. Chromium's own log on stderr (--enable-logging=stderr): no "Uncaught" exception, no
#      console message at ERROR level, no refused load (CSP) and no net error.
# Installs chromium with apt-get when it is missing and we are root (so CI can call this).
set -euo pipefail

usage() { echo "usage: $0 REPORT.html [SCREENSHOT.png]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
report=$1
[[ -f $report ]] || { echo "check.sh: no such file: $report" >&2; exit 2; }
report_abs=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")
shot=${2:-${report_abs%.html}.png}
shot_dir=$(dirname "$shot")
mkdir -p "$shot_dir"
shot_abs=$(cd "$shot_dir" && pwd)/$(basename "$shot")

chromium=${CHROMIUM:-/usr/bin/chromium}
if [[ ! -x $chromium ]]; then
    if command -v chromium >/dev/null 2>&1; then
        chromium=$(command -v chromium)
    elif [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "check.sh: installing chromium" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
        chromium=/usr/bin/chromium
    else
        echo "check.sh: chromium not found (set CHROMIUM=..., or run as root to install it)" >&2
        exit 2
    fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
url="file://$report_abs"
flags=(
    --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --disable-dev-shm-usage --hide-scrollbars --mute-audio
    --enable-logging=stderr --v=0
    --virtual-time-budget=3000
)

# 1. The DOM after load, with the recorder's count.
timeout 120 "$chromium" "${flags[@]}" --user-data-dir="$work/dom" --dump-dom "$url" \
    >"$work/dom.html" 2>"$work/dom.log" || {
    echo "check.sh: chromium failed dumping the DOM" >&2
    tail -n 20 "$work/dom.log" >&2
    exit 1
}
# 2. The screenshot (its log is checked too).
timeout 120 "$chromium" "${flags[@]}" --user-data-dir="$work/shot" \
    --screenshot="$shot_abs" --window-size=1400,4000 "$url" \
    >"$work/shot.out" 2>"$work/shot.log" || {
    echo "check.sh: chromium failed taking the screenshot" >&2
    tail -n 20 "$work/shot.log" >&2
    exit 1
}

fail=0
errors=$(grep -o 'data-errors="[0-9]*"' "$work/dom.html" | head -n 1 | grep -o '[0-9]\+' || true)
if [[ -z $errors ]]; then
    echo "check.sh: FAIL: the dumped DOM has no data-errors attribute (did the page load?)" >&2
    fail=1
elif [[ $errors != 0 ]]; then
    echo "check.sh: FAIL: the page recorded $errors error(s)" >&2
    fail=1
fi

# Console errors and exceptions as Chromium logs them. Its stderr log carries no level for
# page messages, e.g.
#   [..:INFO:CONSOLE:12] "Uncaught ReferenceError: x is not defined", source: file:///... (12)
#   [..:INFO:CONSOLE:0] "Loading the image 'https://..' violates the following Content Security Policy ..."
# so error-like page messages are matched by their text (console.error itself is counted by
# the page's recorder, signal 1); other page messages are shown but do not fail the check.
pattern='Uncaught|violates the following Content Security Policy|Refused to|net::ERR_|Failed to load|SecurityError|TypeError|ReferenceError|SyntaxError'
grep -h 'CONSOLE' "$work/dom.log" "$work/shot.log" | sort -u >"$work/console.log" || true
if grep -E "$pattern" "$work/console.log" >"$work/bad.log"; then
    echo "check.sh: FAIL: console errors:" >&2
    cat "$work/bad.log" >&2
    fail=1
elif [[ -s $work/console.log ]]; then
    echo "check.sh: note: console messages (not errors):" >&2
    cat "$work/console.log" >&2
fi

if [[ ! -s $shot_abs ]]; then
    echo "check.sh: FAIL: no screenshot written" >&2
    fail=1
fi

if [[ $fail -ne 0 ]]; then
    exit 1
fi
echo "check.sh: OK: no console error, no uncaught exception; screenshot $shot_abs"
