#!/usr/bin/env bash
# Creates (once) a Python environment the tests use and prints its python.
#   venv.sh                 requirements.txt           -> target/pyenv
#   venv.sh NAME.txt        tests/python/NAME.txt      -> target/pyenv-NAME
# A second environment holds what cannot share the first: an older release of a library the
# first pins newer (botocore 1.43 beside 1.44, the SDKs' previous major versions).
# Idempotent: an environment whose requirements stamp matches is reused as it is.
# Needs python3 with the venv module and access to the Python package registry.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
reqs="${1:-requirements.txt}"
if [ "$reqs" = "requirements.txt" ]; then
  env_dir="${STORMRIG_PYENV:-$root/target/pyenv}"
else
  env_dir="$root/target/pyenv-${reqs%.txt}"
fi
[ -f "$here/$reqs" ] || { echo "venv.sh: no tests/python/$reqs" >&2; exit 2; }
stamp="$env_dir/.requirements"
if [ ! -x "$env_dir/bin/python" ] || ! cmp -s "$here/$reqs" "$stamp"; then
  mkdir -p "$(dirname "$env_dir")"
  python3 -m venv "$env_dir" >&2
  "$env_dir/bin/pip" install --quiet --disable-pip-version-check -r "$here/$reqs" >&2
  cp "$here/$reqs" "$stamp"
fi
echo "$env_dir/bin/python"
