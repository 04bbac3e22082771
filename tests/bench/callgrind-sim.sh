#!/usr/bin/env bash
# Instructions per simulated attempt: `stormrig bench sim` under callgrind, its instruction
# total over the attempts it simulated (the storm and the layered run together, as the
# bench prints them). Instructions do not move with the host's load, unlike timings.
#
#   tests/bench/callgrind-sim.sh            # ~1 min under valgrind at --scale 30
#
# Prints `instructions=N attempts=N instructions_per_attempt=N aim=1200 result=pass|fail`
# on its last line (peers.sh reads it). The total includes the process's start and the
# scenario's parsing (a few million instructions, under 0.5 % at --scale 30).
#
# Knobs: STORMRIG_BIN (default target/release/stormrig), SCALE (default 30), AIM (default
# 1200), TOP=N (also print the N costliest functions, callgrind_annotate), SPLIT=1 (also
# print each config's own figure: one callgrind dump per simulated config, its instructions
# over that config's attempts; a config with one attempt per request pays the arrival, the
# request's start and its end on every attempt; TOP then reads only what ran after the last
# config), TIMEOUT (default 300 s). Needs valgrind.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${STORMRIG_BIN:-$ROOT/target/release/stormrig}"
SCALE="${SCALE:-30}"
AIM="${AIM:-1200}"
TOP="${TOP:-0}"
TIMEOUT="${TIMEOUT:-300}"
SPLIT="${SPLIT:-0}"

command -v valgrind >/dev/null || { echo "callgrind-sim.sh: valgrind is not installed" >&2; exit 3; }
[ -x "$BIN" ] || { echo "callgrind-sim.sh: no binary at $BIN (cargo build --release)" >&2; exit 3; }

OUT="$(mktemp -d "${TMPDIR:-/tmp}/stormrig-callgrind.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT

DUMPS=()
[ "$SPLIT" = 1 ] && DUMPS=(--dump-after='*sim*engine*simulate*')
timeout "$TIMEOUT" valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.out" "${DUMPS[@]}" \
    "$BIN" bench sim --scale "$SCALE" >"$OUT/bench.txt" 2>"$OUT/valgrind.txt"

# One file's instruction total (callgrind writes `summary:`, older versions `totals:`).
total_of() {
    local n
    n="$(sed -n 's/^summary: *\([0-9][0-9]*\)$/\1/p' "$1" | tail -1)"
    [ -n "$n" ] || n="$(sed -n 's/^totals: *\([0-9][0-9]*\)$/\1/p' "$1" | tail -1)"
    echo "$n"
}
instructions=""
for f in "$OUT"/cg.out*; do
    n="$(total_of "$f")"
    [ -n "$n" ] && instructions=$(( ${instructions:-0} + n ))
done
attempts="$(awk -F= '$1=="attempts"||$1=="layered_attempts"{s+=$2} END{print s+0}' "$OUT/bench.txt")"
if [ -z "$instructions" ] || [ "$attempts" = 0 ]; then
    echo "callgrind-sim.sh: no instruction total or no attempts (see below)" >&2
    cat "$OUT/bench.txt" "$OUT/valgrind.txt" >&2
    exit 1
fi
if [ "$TOP" -gt 0 ]; then
    # awk reads to the end (no early close): a SIGPIPE here would end the script.
    callgrind_annotate --inclusive=no "$OUT/cg.out" 2>/dev/null \
        | awk -v n="$TOP" '/file:function/{on=1; next} on && NF && !/^-/ && c++ < n' | cut -c1-200
fi
if [ "$SPLIT" = 1 ]; then
    # Dump k is the k-th simulated config: the storm's, then the layered storm's.
    configs="$(awk -F= '$1=="config_attempts"||$1=="layered_config_attempts"{print $2}' "$OUT/bench.txt" | tr ',' '\n')"
    k=0
    while IFS=: read -r name n; do
        k=$((k + 1))
        [ -f "$OUT/cg.out.$k" ] || continue
        awk -v c="$name" -v i="$(total_of "$OUT/cg.out.$k")" -v a="$n" 'BEGIN {
            printf "split config=%s instructions=%d attempts=%d instructions_per_attempt=%.0f\n", c, i, a, (a > 0 ? i / a : 0)
        }'
    done <<<"$configs"
fi
awk -v i="$instructions" -v a="$attempts" -v aim="$AIM" -v s="$SCALE" 'BEGIN {
    per = i / a
    printf "bench=callgrind-sim scale=%s instructions=%d attempts=%d instructions_per_attempt=%.0f aim=%d result=%s\n",
        s, i, a, per, aim, (per <= aim ? "pass" : "fail")
}'
