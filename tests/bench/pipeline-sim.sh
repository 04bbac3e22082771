#!/usr/bin/env bash
# The simulator's speed with every pipeline stage in a config's path, against the same
# configs without them: the storm of `stormrig bench sim` (downstream-503-10s with naive,
# aws-standard and envoy, `--scale 300` by default), once as the presets are and once with a
# deadline, a breaker outside the retry, the aws-adaptive rate limiter, a bulkhead, a
# gradient2 concurrency limit and a per-try timeout, none of them binding (the same
# attempts), alternated ROUNDS times on one core. Prints per run the attempts and the CPU
# seconds, then the median ratio of the full pipeline's CPU over the plain one's (the aim:
# at most 1.20). Simulator only: loopback is not even used.
#
#   tests/bench/pipeline-sim.sh            # about 20 s
#
# Knobs: STORMRIG_BIN (default target/release/stormrig), ROUNDS (3), SCALE (300), CPU (0),
# INSTR=1 (also count both cases' instructions under callgrind at INSTR_SCALE, default 30:
# a ratio that does not move with the host's load, printed as full_over_plain_instructions
# on the line before the last; about a minute; needs valgrind), REF_BIN (a build of an
# earlier commit, e.g. the one whose `bench sim` figure an aim was set against: its plain
# run is timed in each round too, alternated with the others, and a line before the last
# prints the full pipeline's CPU over that build's plain CPU, `full_over_reference_plain_cpu`,
# and with INSTR=1 its instructions).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${STORMRIG_BIN:-$ROOT/target/release/stormrig}"
ROUNDS="${ROUNDS:-3}"
SCALE="${SCALE:-300}"
CPU="${CPU:-0}"
[ -x "$BIN" ] || { echo "pipeline-sim.sh: no binary at $BIN (cargo build --release)" >&2; exit 3; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/stormrig-pipeline-sim.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# The storm without its configs and gates, then the configs of each case.
sed -n '/^\[\[configs\]\]/q; /^gates/d; p' "$ROOT/scenarios/downstream-503-10s.toml" >"$WORK/storm.toml"
{
    cat "$WORK/storm.toml"
    for p in naive aws-standard envoy; do printf '[[configs]]\npreset = "%s"\n\n' "$p"; done
} >"$WORK/plain.toml"
{
    cat "$WORK/storm.toml"
    for p in naive aws-standard envoy; do
        cat <<EOF
[[configs]]
preset = "$p"
per_try_timeout = "1s"
deadline = "5s"
breaker = { failure_threshold = 1000000, open_for = "500ms", half_open_probes = 5 }
rate_limiter = { kind = "aws-adaptive" }
bulkhead = { max_concurrent = 5000, max_queue = 0 }
concurrency_limit = { kind = "gradient2", initial_limit = 2000, min_limit = 100, max_limit = 10000 }
pipeline = ["timeout", "breaker", "retry", "rate-limiter", "bulkhead", "concurrency-limit", "timeout"]

EOF
    done
} >"$WORK/full.toml"

REF="${REF_BIN:-}"
[ -z "$REF" ] || [ -x "$REF" ] || { echo "pipeline-sim.sh: REF_BIN $REF is not executable" >&2; exit 3; }
cases=(plain full)
[ -z "$REF" ] || cases=(reference plain full)

ratios=()
ref_ratios=()
for r in $(seq 1 "$ROUNDS"); do
    declare -A cpu=()
    for c in "${cases[@]}"; do
        bin="$BIN" config="$c"
        [ "$c" = reference ] && bin="$REF" config=plain
        /usr/bin/time -f "%U %S" -o "$WORK/time" taskset -c "$CPU" \
            "$bin" sim "$WORK/$config.toml" --scale "$SCALE" --quiet --out "$WORK/out-$c" >/dev/null 2>"$WORK/err" || {
            cat "$WORK/err" >&2
            exit 1
        }
        attempts="$(python3 -c "import json,sys; print(sum(c['attempts'] for c in json.load(open(sys.argv[1]))['configs']))" "$WORK/out-$c/summary.json")"
        cpu[$c]="$(awk '{ print $1 + $2 }' "$WORK/time")"
        echo "round=$r case=$c attempts=$attempts cpu_s=${cpu[$c]}"
    done
    ratios+=("$(awk -v f="${cpu[full]}" -v p="${cpu[plain]}" 'BEGIN { printf "%.3f", f / p }')")
    [ -z "$REF" ] || ref_ratios+=("$(awk -v f="${cpu[full]}" -v p="${cpu[reference]}" 'BEGIN { printf "%.3f", f / p }')")
done
median_of() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
if [ "${INSTR:-0}" = 1 ]; then
    command -v valgrind >/dev/null || { echo "pipeline-sim.sh: INSTR=1 needs valgrind" >&2; exit 3; }
    declare -A instr=()
    for c in plain full; do
        valgrind --tool=callgrind --callgrind-out-file="$WORK/cg-$c.out" "$BIN" sim "$WORK/$c.toml" \
            --scale "${INSTR_SCALE:-30}" --quiet --out "$WORK/cg-out-$c" >/dev/null 2>"$WORK/cg-$c.err" &
    done
    wait
    for c in plain full; do
        instr[$c]="$(sed -n 's/^totals: *//p' "$WORK/cg-$c.out")"
        [ -n "${instr[$c]}" ] || { cat "$WORK/cg-$c.err" >&2; exit 1; }
    done
    awk -v f="${instr[full]}" -v p="${instr[plain]}" -v s="${INSTR_SCALE:-30}" 'BEGIN {
        printf "instructions scale=%s plain=%d full=%d full_over_plain_instructions=%.3f\n", s, p, f, f / p
    }'
    if [ -n "$REF" ]; then
        valgrind --tool=callgrind --callgrind-out-file="$WORK/cg-reference.out" "$REF" sim "$WORK/plain.toml" \
            --scale "${INSTR_SCALE:-30}" --quiet --out "$WORK/cg-out-reference" >/dev/null 2>"$WORK/cg-reference.err"
        ref_instr="$(sed -n 's/^totals: *//p' "$WORK/cg-reference.out")"
        [ -n "$ref_instr" ] || { cat "$WORK/cg-reference.err" >&2; exit 1; }
        awk -v f="${instr[full]}" -v p="$ref_instr" -v s="${INSTR_SCALE:-30}" 'BEGIN {
            printf "instructions scale=%s reference_plain=%d full=%d full_over_reference_plain_instructions=%.3f\n", s, p, f, f / p
        }'
    fi
fi
if [ -n "$REF" ]; then
    m="$(median_of "${ref_ratios[@]}")"
    awk -v m="$m" -v b="$REF" 'BEGIN { printf "reference=%s full_over_reference_plain_cpu=%s aim=1.20 result=%s\n", b, m, (m <= 1.20 ? "pass" : "fail") }'
fi
median="$(median_of "${ratios[@]}")"
awk -v m="$median" 'BEGIN { printf "bench=pipeline-sim full_over_plain_cpu=%s aim=1.20 result=%s\n", m, (m <= 1.20 ? "pass" : "fail") }'
