#!/usr/bin/env bash
# `stormrig bench policy` of this tree against a reference commit built on the same host,
# alternated round by round (REF, this, REF, this, ...), so that a shared machine's noise
# falls on both alike.
#
#   tests/bench/policy-vs.sh [REF]      # REF defaults to 65b4565
#
# REF is built once by tests/bench/ref-build.sh (a detached worktree under
# target/ref-builds/ with a target directory of its own; the first build takes minutes,
# later runs reuse it). This tree's binary is target/release/stormrig (built with `cargo build
# --release` unless STORMRIG_BIN names one).
#
# Per case (config, status) it prints the median ns per attempt of each build over the
# rounds, the median of the per-round ratios (this / REF: quoted because it compares runs
# made seconds apart) and pass/fail against the aim of at most 1.05.
#
# Knobs: ROUNDS (default 3), ITERATIONS (attempts per case and run, default 5000000),
# CPU (pin both binaries to this CPU with taskset when set), AIM (default 1.05),
# TIMEOUT (seconds per bench run, default 120; the whole run is bounded by the build plus
# ROUNDS × 2 × TIMEOUT).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REF="${1:-65b4565}"
ROUNDS="${ROUNDS:-3}"
ITERATIONS="${ITERATIONS:-5000000}"
AIM="${AIM:-1.05}"
TIMEOUT="${TIMEOUT:-120}"

REF_BIN="$(bash "$ROOT/tests/bench/ref-build.sh" "$REF")"

if [ -n "${STORMRIG_BIN:-}" ]; then
    NEW_BIN="$STORMRIG_BIN"
else
    (cd "$ROOT" && cargo build --release --locked >&2)
    NEW_BIN="$ROOT/target/release/stormrig"
fi

PIN=()
if [ -n "${CPU:-}" ]; then
    PIN=(taskset -c "$CPU")
fi

OUT="$(mktemp -d "${TMPDIR:-/tmp}/stormrig-policy-vs.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT

for round in $(seq 1 "$ROUNDS"); do
    for side in ref new; do
        if [ "$side" = ref ]; then bin="$REF_BIN"; else bin="$NEW_BIN"; fi
        echo "round $round/$ROUNDS: $side" >&2
        timeout "$TIMEOUT" "${PIN[@]}" "$bin" bench policy --iterations "$ITERATIONS" \
            | sed "s/^/round=$round side=$side /" >>"$OUT/lines"
    done
done

python3 - "$OUT/lines" "$REF" "$AIM" <<'PY'
import statistics
import sys

path, ref, aim = sys.argv[1], sys.argv[2], float(sys.argv[3])
runs = {}  # (config, status) -> {side: {round: ns}}
order = []
for line in open(path, encoding="utf-8"):
    kv = dict(f.split("=", 1) for f in line.split() if "=" in f)
    if kv.get("bench") != "policy":
        continue
    case = (kv["config"], kv["status"])
    if case not in runs:
        runs[case] = {"ref": {}, "new": {}}
        order.append(case)
    runs[case][kv["side"]][kv["round"]] = float(kv["ns_per_attempt"])

failed = 0
print(f"# bench policy: ref={ref} vs this tree, median of rounds; ratio = median of per-round new/ref; aim <= {aim}")
print(f"{'config':<14} {'status':>6} {'ref_ns':>8} {'new_ns':>8} {'ratio':>6}  result")
for case in order:
    ref_ns, new_ns = runs[case]["ref"], runs[case]["new"]
    rounds = sorted(set(ref_ns) & set(new_ns))
    if not rounds:
        print(f"{case[0]:<14} {case[1]:>6} {'-':>8} {'-':>8} {'-':>6}  missing (case absent from one build)")
        failed += 1
        continue
    ratio = statistics.median(new_ns[r] / ref_ns[r] for r in rounds)
    ok = ratio <= aim
    failed += not ok
    print(
        f"{case[0]:<14} {case[1]:>6} {statistics.median(ref_ns.values()):>8.1f} "
        f"{statistics.median(new_ns.values()):>8.1f} {ratio:>6.3f}  {'pass' if ok else 'FAIL'}"
    )
print(f"policy_vs_ref={'pass' if failed == 0 else 'fail'} cases_failed={failed}")
PY
