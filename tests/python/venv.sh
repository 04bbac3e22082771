#!/usr/bin/env bash
# Creates (once) the Python environment the tests use, in target/pyenv, and prints its python.
# Idempotent: an environment whose requirements stamp matches is reused as it is.
# Needs python3 with the venv module and access to the Python package registry.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
env_dir="${STORMRIG_PYENV:-$root/target/pyenv}"
stamp="$env_dir/.requirements"
if [ ! -x "$env_dir/bin/python" ] || ! cmp -s "$here/requirements.txt" "$stamp"; then
  mkdir -p "$(dirname "$env_dir")"
  python3 -m venv "$env_dir" >&2
  "$env_dir/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
  cp "$here/requirements.txt" "$stamp"
fi
echo "$env_dir/bin/python"
