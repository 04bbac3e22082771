#!/usr/bin/env bash
# The test command: prepares everything the suite needs on a bare machine, then runs all of it.
#
#   bash tests/run.sh [ARGS...]      # ARGS go to `cargo test --release` (a filter, --test NAME)
#
# 1. System packages: nginx (the real target of the proxy, TLS and h2c tests), Chromium
#    (the report's browser and layout checks), Node with npm (the real JavaScript clients)
#    and the Prometheus Pushgateway (the receiver of pushed metrics). Missing
#    ones are installed with apt-get when this runs as root, or through `sudo -n` when that
#    needs no password. Otherwise it says exactly what to install and exits 3: a missing
#    tool fails the run, it is never skipped.
# 2. The Python environment and the Node packages of the real-client comparisons
#    (tests/python/venv.sh for each requirements file, tests/node/modules.sh; all
#    pinned).
# 3. `cargo test --release --no-fail-fast`: every test binary runs even when one fails.
# 4. The browser check: a real run's HTML report loaded by headless Chromium, offline, with no
#    console error (skipped only when ARGS narrow the run to some tests).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "tests/run.sh: $*" >&2; }

packages=()
[ -x /usr/sbin/nginx ] || packages+=(nginx)
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || packages+=(chromium)
# Node runs the real JavaScript clients (Toxiproxy's); npm installs them.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
# The Prometheus Pushgateway and Prometheus itself (its remote-write receiver) receive the
# pushed metrics of a run in the telemetry tests.
[ -x /usr/bin/prometheus-pushgateway ] || packages+=(prometheus-pushgateway)
[ -x /usr/bin/prometheus ] || packages+=(prometheus)
if [ ${#packages[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    say "missing: ${packages[*]}; this user cannot install them."
    say "install them, then run this again:"
    say "  sudo apt-get update && sudo apt-get install -y ${packages[*]}"
    exit 3
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    say "missing: ${packages[*]}, and there is no apt-get here: install them with this system's"
    say "package manager (nginx at /usr/sbin/nginx, chromium on PATH), then run this again"
    exit 3
  fi
  say "installing ${packages[*]} (apt-get)"
  "${as_root[@]}" apt-get update -qq >&2
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${packages[@]}" >&2
  # Debian starts the nginx service it installed where an init system runs; the tests start
  # their own nginx on free ports and need none listening on port 80.
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    "${as_root[@]}" systemctl stop nginx >/dev/null 2>&1 || true
  fi
fi

say "preparing the Python environments (tests/python/venv.sh)"
bash tests/python/venv.sh >/dev/null
# Older releases of libraries the first environment pins newer, each in its own.
bash tests/python/venv.sh botocore-1.43.txt >/dev/null
bash tests/python/venv.sh llm-sdk-previous.txt >/dev/null
say "preparing the Node packages (tests/node/modules.sh)"
bash tests/node/modules.sh >/dev/null

cargo test --release --no-fail-fast "$@"

if [ $# -eq 0 ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  say "browser check: a 4 s run's report in headless Chromium"
  status=0
  cargo run --release --quiet -- run scenarios/downstream-503-10s.toml --duration 4s --quiet \
    --out "$out/run" || status=$?
  # 1 = a gate failed, which the shipped scenario's gates may do in 4 s; the report is whole.
  if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
    say "the run for the browser check exited $status"
    exit "$status"
  fi
  bash tests/browser/check.sh "$out/run/index.html" "$out/run/screenshot.png"
  bash tests/browser/layout.sh "$out/run/index.html" 1400
  echo "tests/run.sh: all passed"
fi
