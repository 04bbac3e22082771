#!/usr/bin/env bash
# Installs (once) the Node packages the tests use, as pinned by tests/node/package-lock.json,
# into target/nodeenv, and prints its node_modules directory.
# Idempotent: an install whose lock stamp matches is reused as it is.
# Needs node and npm (Node 18 or later) and access to the npm registry.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
env_dir="${STORMRIG_NODEENV:-$root/target/nodeenv}"
stamp="$env_dir/.package-lock"
if [ ! -d "$env_dir/node_modules" ] || ! cmp -s "$here/package-lock.json" "$stamp"; then
  mkdir -p "$env_dir"
  cp "$here/package.json" "$here/package-lock.json" "$env_dir/"
  (cd "$env_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  cp "$here/package-lock.json" "$stamp"
fi
echo "$env_dir/node_modules"
