#!/usr/bin/env bash
# Creates (once) the Python environment with botocore 1.43 (botocore-1.43.txt), in
# target/pyenv-botocore-1.43, and prints its python. As venv.sh does for requirements.txt:
# idempotent, reused while its requirements stamp matches.
# Needs python3 with the venv module and access to the Python package registry.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
env_dir="${STORMRIG_PYENV_BOTOCORE_1_43:-$root/target/pyenv-botocore-1.43}"
stamp="$env_dir/.requirements"
if [ ! -x "$env_dir/bin/python" ] || ! cmp -s "$here/botocore-1.43.txt" "$stamp"; then
  mkdir -p "$(dirname "$env_dir")"
  python3 -m venv "$env_dir" >&2
  "$env_dir/bin/pip" install --quiet --disable-pip-version-check -r "$here/botocore-1.43.txt" >&2
  cp "$here/botocore-1.43.txt" "$stamp"
fi
echo "$env_dir/bin/python"
