#!/usr/bin/env bash
# Builds an earlier commit of this repository once, beside this tree, and prints the path of
# its release binary: the reference a benchmark alternates with this tree's build, so that a
# ratio is measured on one host in one minute rather than against a figure from elsewhere.
#
#   tests/bench/ref-build.sh REF        # prints .../target/ref-builds/<sha>/target/release/stormrig
#
# REF is checked out in a detached git worktree under target/ref-builds/<sha>/tree with a
# target directory of its own (the main target/ is left untouched). The first build takes
# minutes; later calls find it built and print the path at once. Build output goes to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REF="${1:?usage: ref-build.sh REF}"
SHA="$(git -C "$ROOT" rev-parse --verify "$REF^{commit}")"
BASE="$ROOT/target/ref-builds/${SHA:0:12}"
TREE="$BASE/tree"
BIN="$BASE/target/release/stormrig"

mkdir -p "$BASE"
if [ ! -d "$TREE" ]; then
    git -C "$ROOT" worktree add --detach "$TREE" "$SHA" >&2
fi
if [ ! -x "$BIN" ] || [ ! -e "$BASE/built" ]; then
    echo "ref-build.sh: building $REF ($SHA) in $TREE ..." >&2
    rm -f "$BASE/built"
    (cd "$TREE" && CARGO_TARGET_DIR="$BASE/target" cargo build --release --locked >&2)
    touch "$BASE/built"
fi
echo "$BIN"
