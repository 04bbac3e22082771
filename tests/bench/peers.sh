#!/usr/bin/env bash
# stormrig side by side with its peers on loopback: wrk, oha, nginx, and the floor (the
# cheapest load loop the machine allows: `stormrig bench floor`, raw epoll, no policy).
#
#   tests/bench/peers.sh            # ~11 min: 3 rounds of 10 s per tool and mode
#   QUICK=1 tests/bench/peers.sh    # ~1 min: 1 round of 3 s (a smoke run, not a measurement)
#
# Generators run pinned to CPU $GEN_CPU (default 0), servers (nginx, stormrig's target) to
# $SRV_CPU (default 1). Each section alternates the tools round by round (A/B/A/B), and the
# table quotes medians of the rounds and the median of per-round ratios: absolute figures on
# a shared machine are noisy, ratios measured in the same round much less so.
#
# Other knobs: ROUNDS, DUR (seconds), NGINX_PORT, NGINX_H2C_PORT (the same nginx over HTTP/2 in
# clear, for the generator's h2c row), TARGET_PORT, CONFIG (retry preset of the
# stormrig generator, default naive), PACINGS (the open loop's scheduler settings as
# SPIN_US:BATCH_US, default "0:50 0:0 0:90 20:0 1000:0": the lag/CPU trade-off curve of spinning
# before each arrival and of batching the arrivals of a window onto one wake-up; the first is
# the row the open loop's peers are compared with: stormrig run's default), MEMORY=0
# (skip the memory rows, ~1 min: `stormrig bench memory` at 4000 with churn, at 100,000 over
# h2c and at the descriptor limit over HTTP/1.1, and `bench sim-memory` at 10 M),
# AIMS=0 (skip the callgrind count, the full-pipeline simulator run against this build's
# plain configs and SIM_REF's, default 9e4b4ae, and the policy path against POLICY_REF,
# default 65b4565; each reference is built in a work tree the first time: several minutes),
# OHA_INSTALL=0 (never install oha), STORMRIG_BIN (a stormrig binary to measure instead of
# building the perf profile).
# Needs: nginx, wrk, /usr/bin/time, python3 (installed with apt-get when root and missing);
# oha (cargo install oha --locked; its rows are skipped when that fails, e.g. offline).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/tests/bench"
QUICK="${QUICK:-0}"
if [ "$QUICK" = 1 ]; then
    ROUNDS="${ROUNDS:-1}"
    DUR="${DUR:-3}"
else
    ROUNDS="${ROUNDS:-3}"
    DUR="${DUR:-10}"
fi
GEN_CPU="${GEN_CPU:-0}"
SRV_CPU="${SRV_CPU:-1}"
NGINX_PORT="${NGINX_PORT:-18480}"
TARGET_PORT="${TARGET_PORT:-18481}"
NGINX_H2C_PORT="${NGINX_H2C_PORT:-18482}"
CONFIG="${CONFIG:-naive}"
PACINGS="${PACINGS:-0:50 0:0 0:90 20:0 1000:0}"
CONNS=64
RATE=20000

WORK="$(mktemp -d "${TMPDIR:-/tmp}/stormrig-peers.XXXXXX")"
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
TARGET_PID=""
NGINX_STARTED=0

cleanup() {
    set +e
    if [ -n "$TARGET_PID" ] && kill -0 "$TARGET_PID" 2>/dev/null; then
        kill -TERM "$TARGET_PID" 2>/dev/null
        wait "$TARGET_PID" 2>/dev/null
    fi
    if [ "$NGINX_STARTED" = 1 ]; then
        "$ROOT/targets/nginx/run.sh" stop "$WORK/nginx" >/dev/null 2>&1
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "peers: $*" >&2; }

# ---- tools -------------------------------------------------------------------------------
missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
[ -x /usr/bin/time ] || missing+=(time)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v taskset >/dev/null 2>&1 || missing+=(util-linux)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        log "installing ${missing[*]}"
        apt-get update -qq >/dev/null && apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        log "missing ${missing[*]} and not root: install them (apt-get install -y ${missing[*]})"
        exit 3
    fi
fi
OHA=""
if command -v oha >/dev/null 2>&1; then
    OHA="$(command -v oha)"
elif [ -x "$HOME/.cargo/bin/oha" ]; then
    OHA="$HOME/.cargo/bin/oha"
elif [ "${OHA_INSTALL:-1}" = 0 ]; then
    log "oha not found and OHA_INSTALL=0: oha rows skipped"
else
    log "oha not found: cargo install oha --locked (a few minutes)"
    if cargo install oha --locked >"$WORK/oha-install.log" 2>&1; then
        OHA="$(command -v oha || echo "$HOME/.cargo/bin/oha")"
    else
        log "could not install oha (offline?): its rows are skipped; see the log tail:"
        tail -3 "$WORK/oha-install.log" >&2 || true
    fi
fi

if [ -n "${STORMRIG_BIN:-}" ]; then
    STORMRIG="$STORMRIG_BIN"
    log "measuring $STORMRIG (STORMRIG_BIN)"
else
    log "building stormrig (perf profile: release + fat LTO)"
    # The perf profile (fat LTO, one codegen unit; see Cargo.toml): what a benchmark should run.
    (cd "$ROOT" && cargo build --profile perf --quiet)
    STORMRIG="${CARGO_TARGET_DIR:-$ROOT/target}/perf/stormrig"
    [ -x "$STORMRIG" ] || STORMRIG="$ROOT/target/perf/stormrig"
fi

# ---- helpers -----------------------------------------------------------------------------
# CPU seconds (user + system) of one process from /proc (USER_HZ = 100).
proc_cpu() {
    awk '{ sub(/^.*\) /, ""); print ($12 + $13) / 100 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# Runs a generator pinned to GEN_CPU under /usr/bin/time; stdout to $1, "user sys" to $1.time.
timed() {
    local out="$1"
    shift
    /usr/bin/time -f "%U %S" -o "$out.time" taskset -c "$GEN_CPU" "$@" >"$out" 2>"$out.err" || {
        log "command failed: $*"
        tail -5 "$out.err" >&2 || true
        return 1
    }
}

cpu_of() { awk '{ print $1 + $2 }' "$1.time"; }

per_million() { # cpu_s requests
    awk -v c="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.3f", c / (n / 1e6); else print "NA" }'
}

# wrk latency "250.00us" / "1.20ms" / "1.01s" -> ms
wrk_ms() {
    awk -v v="$1" 'BEGIN {
        if (v ~ /us$/) { sub(/us$/, "", v); printf "%.3f", v / 1000 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.3f", v }
        else if (v ~ /m$/) { sub(/m$/, "", v); printf "%.3f", v * 60000 }
        else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.3f", v * 1000 }
        else print "NA" }'
}

kv() { sed -n "s/^$2=//p" "$1" | head -1; }

record() { # section tool mode round rps p50 p99 cpu_per_m [note]
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"
}

run_wrk() { # section mode round url [server-pid]
    local out="$WORK/wrk.out" srv_cpu0=0 cpu n rps p50 p99
    [ -n "${5:-}" ] && srv_cpu0="$(proc_cpu "$5")"
    timed "$out" wrk -t1 -c"$CONNS" -d"${DUR}s" --latency "$4" || return 0
    rps="$(awk '/^Requests\/sec:/ { print $2 }' "$out")"
    n="$(awk '/requests in/ { print $1 }' "$out")"
    p50="$(wrk_ms "$(awk '$1 == "50%" { print $2 }' "$out")")"
    p99="$(wrk_ms "$(awk '$1 == "99%" { print $2 }' "$out")")"
    if [ -n "${5:-}" ]; then
        # Target rows: the server's CPU per million requests it answered.
        cpu="$(awk -v a="$(proc_cpu "$5")" -v b="$srv_cpu0" 'BEGIN { print a - b }')"
    else
        cpu="$(cpu_of "$out")"
    fi
    record "$1" wrk "$2" "$3" "$rps" "$p50" "$p99" "$(per_million "$cpu" "$n")" ""
}

run_oha() { # section mode round url extra-args...
    [ -n "$OHA" ] || return 0
    local section="$1" mode="$2" round="$3" url="$4" out="$WORK/oha.out"
    shift 4
    timed "$out" "$OHA" -z "${DUR}s" -c "$CONNS" --no-tui --output-format json "$@" "$url" || return 0
    python3 - "$out" "$(cpu_of "$out")" "$section" "$mode" "$round" >>"$RESULTS" <<'EOF'
import json, sys
path, cpu, section, mode, rnd = sys.argv[1:6]
d = json.load(open(path))
s, p = d["summary"], d.get("latencyPercentiles", {})
n = sum(d.get("statusCodeDistribution", {}).values()) or s.get("total", 0)
rps = s.get("requestsPerSec") or 0
per_m = float(cpu) / (n / 1e6) if n else float("nan")
ms = lambda v: "NA" if v is None else "%.3f" % (v * 1000)
print("\t".join([section, "oha", mode, rnd, "%.1f" % rps, ms(p.get("p50")), ms(p.get("p99")), "%.3f" % per_m, ""]))
EOF
}

run_gen() { # round [h2c|threads2]: HTTP/1.1 to nginx's port, HTTP/2 in clear to its h2c
    # port, or HTTP/1.1 on two runtime threads (on both cores: nginx's is the second)
    local out="$WORK/gen.out" cpu n url="http://127.0.0.1:$NGINX_PORT/" mode="closed" flag=()
    local threads=1 label="1 thread" cpus="$GEN_CPU"
    if [ "${2:-}" = h2c ]; then
        url="http://127.0.0.1:$NGINX_H2C_PORT/" mode="closed h2c" flag=(--h2c)
    fi
    if [ "${2:-}" = threads2 ]; then
        threads=2 label="2 threads" cpus="$GEN_CPU,$SRV_CPU"
    fi
    GEN_CPU="$cpus" timed "$out" "$STORMRIG" bench generator --url "$url" "${flag[@]}" \
        --connections "$CONNS" --duration "${DUR}s" --config "$CONFIG" --threads "$threads" || return 0
    n="$(kv "$out" requests)"
    cpu="$(cpu_of "$out")"
    record generator stormrig "$mode, $CONFIG, $label" "$1" "$(kv "$out" req_per_s)" \
        "$(kv "$out" p50_ms)" "$(kv "$out" p99_ms)" "$(per_million "$cpu" "$n")" \
        "attempts=$(kv "$out" attempts)"
}

run_open() { # round spin-us batch-us [threads]: two threads run on both cores (nginx's too),
    # as `stormrig run` does by default on this machine
    local out="$WORK/open.out" cpu n threads="${4:-1}" cpus="$GEN_CPU" label=""
    if [ "$threads" != 1 ]; then
        cpus="$GEN_CPU,$SRV_CPU" label=", $threads threads"
    fi
    GEN_CPU="$cpus" timed "$out" "$STORMRIG" bench open-loop --url "http://127.0.0.1:$NGINX_PORT/" \
        --rate "$RATE" --duration "${DUR}s" --config "$CONFIG" --threads "$threads" \
        --connections "$CONNS" --spin-us "$2" --batch-us "$3" || return 0
    n="$(kv "$out" requests)"
    cpu="$(cpu_of "$out")"
    record open-loop stormrig "$RATE/s, $CONFIG, spin ${2}us, batch ${3}us$label" "$1" \
        "$(kv "$out" achieved_rate)" "$(kv "$out" p50_ms)" "$(kv "$out" p99_ms)" \
        "$(per_million "$cpu" "$n")" \
        "rate err $(kv "$out" achieved_rate_error_pct)%, lag p99 $(kv "$out" lag_p99_ms) ms, sleeps/req $(kv "$out" sleeps_per_request)"
}

run_floor() { # section round [rate]: the cheapest loop this machine allows, closed or open
    local out="$WORK/floor.out" cpu n mode="closed, raw epoll, 1 thread" flag=() note=""
    if [ -n "${3:-}" ]; then
        mode="$3/s, raw epoll, batch 50us, 1 thread" flag=(--rate "$3" --batch-us 50)
    fi
    timed "$out" "$STORMRIG" bench floor --url "http://127.0.0.1:$NGINX_PORT/" \
        --connections "$CONNS" --duration "${DUR}s" "${flag[@]}" || return 0
    n="$(kv "$out" requests)"
    cpu="$(cpu_of "$out")"
    if [ -n "${3:-}" ]; then
        note="rate err $(kv "$out" achieved_rate_error_pct)%, lag p99 $(kv "$out" lag_p99_ms) ms, sleeps/req $(kv "$out" sleeps_per_request), dropped $(kv "$out" dropped)"
    fi
    record "$1" floor "$mode" "$2" "$(kv "$out" req_per_s)" "$(kv "$out" p50_ms)" \
        "$(kv "$out" p99_ms)" "$(per_million "$cpu" "$n")" "$note"
}

# ---- servers -----------------------------------------------------------------------------
log "nginx (1 worker) on 127.0.0.1:$NGINX_PORT pinned to CPU $SRV_CPU"
NGINX_ACCESS_LOG=off taskset -c "$SRV_CPU" "$ROOT/targets/nginx/run.sh" start "$WORK/nginx" "$NGINX_PORT" - "$NGINX_H2C_PORT"
NGINX_STARTED=1
NGINX_WORKER="$(pgrep -P "$(cat "$WORK/nginx/nginx.pid")" | head -1)"
# The access log is off here (NGINX_ACCESS_LOG=off); truncating keeps a stray one small.
trunc_log() { : >"$WORK/nginx/access.log"; }

log "stormrig bench target (503, 1 thread) on 127.0.0.1:$TARGET_PORT pinned to CPU $SRV_CPU"
# It serves until the last round's target runs: per round six generator runs (the floor's
# among them), one open-loop run per pacing plus the two-thread one, oha's and the floor's,
# and the two target runs, with a margin for the seconds between runs.
RUNS_PER_ROUND=$((6 + $(echo $PACINGS | wc -w) + 3 + 2))
taskset -c "$SRV_CPU" "$STORMRIG" bench target --listen "127.0.0.1:$TARGET_PORT" --status 503 \
    --threads 1 --duration "$((ROUNDS * (DUR + 5) * RUNS_PER_ROUND + 120))s" \
    >"$WORK/target.out" 2>"$WORK/target.err" &
TARGET_PID=$!
for _ in $(seq 1 100); do
    grep -q listening "$WORK/target.err" 2>/dev/null && break
    sleep 0.05
done

# Warm-up: connections, page cache, CPU frequency.
wrk -t1 -c"$CONNS" -d1s "http://127.0.0.1:$NGINX_PORT/" >/dev/null 2>&1 || true
trunc_log

# ---- rounds ------------------------------------------------------------------------------
for r in $(seq 1 "$ROUNDS"); do
    log "round $r/$ROUNDS: generator max throughput (closed loop, $CONNS connections, ${DUR}s)"
    run_gen "$r"
    trunc_log
    run_gen "$r" h2c
    trunc_log
    run_gen "$r" threads2
    trunc_log
    run_wrk generator "closed, -t1 -c$CONNS" "$r" "http://127.0.0.1:$NGINX_PORT/"
    trunc_log
    run_oha generator "closed, --worker-threads 1 -c$CONNS" "$r" \
        "http://127.0.0.1:$NGINX_PORT/" --worker-threads 1
    trunc_log
    run_floor generator "$r"
    trunc_log
done
for r in $(seq 1 "$ROUNDS"); do
    log "round $r/$ROUNDS: open loop at $RATE req/s"
    for pacing in $PACINGS; do
        run_open "$r" "${pacing%%:*}" "${pacing##*:}"
        trunc_log
    done
    run_open "$r" 0 50 2
    trunc_log
    run_oha open-loop "-q $RATE --latency-correction, 1 thread" "$r" \
        "http://127.0.0.1:$NGINX_PORT/" -q "$RATE" --latency-correction --worker-threads 1
    trunc_log
    run_floor open-loop "$r" "$RATE"
    trunc_log
done
for r in $(seq 1 "$ROUNDS"); do
    log "round $r/$ROUNDS: targets serving 503 (wrk -t1 -c$CONNS)"
    run_wrk target "nginx /fail (503), 1 worker" "$r" \
        "http://127.0.0.1:$NGINX_PORT/fail" "$NGINX_WORKER"
    trunc_log
    run_wrk target-sr "stormrig target (503), 1 thread" "$r" \
        "http://127.0.0.1:$TARGET_PORT/" "$TARGET_PID"
done
# The target section compares two servers driven by the same wrk: relabel so the ratio
# column reads stormrig target / nginx.
python3 - "$RESULTS" <<'EOF'
import sys
p = sys.argv[1]
out = []
for line in open(p):
    f = line.rstrip("\n").split("\t")
    if f[0] == "target-sr":
        f[0], f[1] = "target", "stormrig"
    out.append("\t".join(f))
# stormrig rows first within each section so the table reads top-down.
order = {"generator": 0, "open-loop": 1, "target": 2}
out.sort(key=lambda l: (order.get(l.split("\t")[0], 9), l.split("\t")[1] != "stormrig"))
open(p, "w").write("\n".join(out) + "\n")
EOF

log "policy decision plus recording"
"$STORMRIG" bench policy --iterations 2000000 >"$WORK/policy.out"

log "simulator: 3-config storm on one thread"
taskset -c "$GEN_CPU" "$STORMRIG" bench sim >"$WORK/sim.out"

MEM_OUT=""
MEM_ROWS="$WORK/memory-rows.tsv"
: >"$MEM_ROWS"
# One row of the memory table from a `bench memory` / `bench sim-memory` output: case,
# engine and protocol, what bounded the count, and the seconds the run took.
mem_row() { # out case secs
    local out="$1" grown
    grown="$(kv "$out" rss_growth_kib)"
    if [ -z "$grown" ]; then # the simulator's: peak over the resident set before it
        grown="$(awk -v p="$(kv "$out" peak_rss_kib)" -v b="$(kv "$out" rss_before_kib)" \
            'BEGIN { print p - b }')"
    fi
    # "-" for a key the output has not: `read` would merge empty tab-separated fields.
    kv_or() { local v; v="$(kv "$1" "$2")"; echo "${v:--}"; }
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$2" "$(kv_or "$out" protocol)" \
        "$(kv_or "$out" peak_in_flight)" "$(kv_or "$out" in_flight_bound)" \
        "$(kv_or "$out" bytes_per_in_flight)" "$(kv_or "$out" rss_second_half_spread_pct)" \
        "$grown" "$3" >>"$MEM_ROWS"
}
mem_run() { # out case stormrig-args...
    local out="$1" label="$2" t0 t1
    shift 2
    t0="$(date +%s.%N)"
    "$STORMRIG" "$@" >"$out" 2>"$out.err" || {
        log "command failed: $*"
        tail -5 "$out.err" >&2 || true
        return 0
    }
    t1="$(date +%s.%N)"
    mem_row "$out" "$label" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
}
if [ "${MEMORY:-1}" = 1 ]; then
    # Requests held at once: the product's aims (100,000 live over HTTP/2, 10 M simulated)
    # in a full run; a tenth of them or less with QUICK=1, a smoke run.
    if [ "$QUICK" = 1 ]; then
        H2_HELD=10000 H2_RATE=5000 H2_DUR=6 H1_HELD=2000 H1_RATE=2000 H1_DUR=4 SIM_POP=1000000
        CHURN_DUR=8
    else
        H2_HELD=100000 H2_RATE=25000 H2_DUR=12 H1_HELD=100000 H1_RATE=5000 H1_DUR=10 SIM_POP=10000000
        CHURN_DUR=20
    fi
    # 4000 hanging at once (8000 descriptors, client and target side) fit the usual limits;
    # per-try timeouts (5 s) and retries churn connections while the cap holds.
    log "memory: ${CHURN_DUR} s open loop at 5000 req/s against a target that hangs every request"
    mem_run "$WORK/memory.out" "live, 4000 cap, 5 s per-try timeouts (churn)" \
        bench memory --rate 5000 --duration "${CHURN_DUR}s" --max-in-flight 4000 --per-try-timeout 5s
    MEM_OUT="$WORK/memory.out"
    # Over HTTP/2 all of them are streams of one connection; timeouts longer than the run,
    # so every request started hangs to the end, and the arrivals past the cap are dropped.
    log "memory: $H2_HELD hanging at once over HTTP/2 in clear (${H2_DUR} s at $H2_RATE req/s)"
    mem_run "$WORK/memory-h2.out" "live, $H2_HELD cap, h2c" \
        bench memory --h2c --rate "$H2_RATE" --duration "${H2_DUR}s" \
        --max-in-flight "$H2_HELD" --per-try-timeout 60s
    # Over HTTP/1.1 two descriptors per request: the bench lowers the cap to what fits.
    log "memory: as many hanging at once over HTTP/1.1 as the descriptors allow (ulimit -Hn $(ulimit -Hn))"
    mem_run "$WORK/memory-h1.out" "live, $H1_HELD asked, http1" \
        bench memory --rate "$H1_RATE" --duration "${H1_DUR}s" \
        --max-in-flight "$H1_HELD" --per-try-timeout 60s
    log "memory: simulator, $SIM_POP requests in flight at once"
    mem_run "$WORK/memory-sim.out" "sim, $SIM_POP in flight" \
        bench sim-memory --population "$SIM_POP"
fi

# ---- aims ----------------------------------------------------------------------------------
# The figures that do not move with the host, each against its aim (tests/bench/aims.py):
# bytes per in-flight HTTP/1.1 request (the churn row above), bytes per fleet client
# instance, instructions per simulated attempt (callgrind), and the policy path against
# the reference build POLICY_REF on this host, and the simulator's CPU with every pipeline
# stage in the path over the plain configs. AIMS=0 skips the last three (callgrind about a
# minute; the reference's first build several minutes, reused later).
AIM_ROWS="$WORK/aims.tsv"
: >"$AIM_ROWS"
aim() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$AIM_ROWS"; }
if [ -n "$MEM_OUT" ]; then
    aim "bytes per in-flight HTTP/1.1 request" "$(kv "$MEM_OUT" bytes_per_in_flight)" 16000 le \
        B "bench memory: 4,000 hanging, client and in-process target"
fi
if "$STORMRIG" bench fleet-memory --help >/dev/null 2>&1; then
    log "fleet memory: 1,000,000 client instances of aws-standard"
    "$STORMRIG" bench fleet-memory --clients 1000000 --config aws-standard >"$WORK/fleet.out" 2>"$WORK/fleet.err" ||
        log "bench fleet-memory failed: $(tail -1 "$WORK/fleet.err")"
    aim "bytes per fleet client instance" "$(kv "$WORK/fleet.out" bytes_per_instance)" 256 le \
        B "bench fleet-memory --clients 1000000 --config aws-standard"
fi
if [ "${AIMS:-1}" = 1 ]; then
    if ! command -v valgrind >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        log "installing valgrind"
        apt-get install -y -qq valgrind >/dev/null 2>&1 || true
    fi
    if command -v valgrind >/dev/null 2>&1; then
        log "instructions per simulated attempt (callgrind, bench sim)"
        STORMRIG_BIN="$STORMRIG" bash "$HERE/callgrind-sim.sh" >"$WORK/callgrind.out" 2>"$WORK/callgrind.err" ||
            log "callgrind-sim.sh failed: $(tail -1 "$WORK/callgrind.err")"
        aim "instructions per simulated attempt" \
            "$(tr ' ' '\n' <"$WORK/callgrind.out" | kv /dev/stdin instructions_per_attempt)" 1200 le \
            instr "callgrind, bench sim --scale 30"
    fi
    # The full pipeline's aim was set against the simulator's speed of the day it was set:
    # that commit (SIM_REF) is built here and its plain run alternated with this tree's runs.
    SIM_REF="${SIM_REF:-9e4b4ae}"
    log "simulator with every pipeline stage in the path against the plain configs and $SIM_REF's"
    SIM_REF_BIN="$(bash "$HERE/ref-build.sh" "$SIM_REF" 2>>"$WORK/pipeline.err")" ||
        { log "building $SIM_REF failed: $(tail -1 "$WORK/pipeline.err")"; SIM_REF_BIN=""; }
    STORMRIG_BIN="$STORMRIG" REF_BIN="$SIM_REF_BIN" CPU="$GEN_CPU" INSTR=1 bash "$HERE/pipeline-sim.sh" >"$WORK/pipeline.out" 2>>"$WORK/pipeline.err" ||
        log "pipeline-sim.sh failed: $(tail -1 "$WORK/pipeline.err")"
    # The same cases counted in instructions, which the host's load does not move.
    grep '^instructions' "$WORK/pipeline.out" | while read -r line; do log "pipeline-sim.sh $line"; done
    aim "simulator CPU, full pipeline / plain" \
        "$(grep '^bench=pipeline-sim' "$WORK/pipeline.out" | tr ' ' '\n' | kv /dev/stdin full_over_plain_cpu)" 1.20 le \
        ratio "tests/bench/pipeline-sim.sh, bench sim's storm, alternated"
    aim "simulator CPU, full pipeline / $SIM_REF plain" \
        "$(grep '^reference=' "$WORK/pipeline.out" | tr ' ' '\n' | kv /dev/stdin full_over_reference_plain_cpu)" 1.20 le \
        ratio "tests/bench/pipeline-sim.sh REF_BIN, $SIM_REF built here, alternated"
    POLICY_REF="${POLICY_REF:-65b4565}"
    log "policy path: bench policy against $POLICY_REF built here, alternated"
    # Release builds on both sides (the reference is built so), whatever STORMRIG_BIN names.
    env -u STORMRIG_BIN bash "$HERE/policy-vs.sh" "$POLICY_REF" >"$WORK/policy-vs.out" 2>"$WORK/policy-vs.err" ||
        log "policy-vs.sh failed: $(tail -1 "$WORK/policy-vs.err")"
    # One row per case: its median per-round ratio over the reference.
    while read -r config status ratio; do
        aim "bench policy $config $status / $POLICY_REF" "$ratio" 1.05 le ratio \
            "tests/bench/policy-vs.sh, release builds alternated"
    done < <(awk 'NR > 2 && NF >= 6 && $5 ~ /^[0-9.]+$/ { print $1, $2, $5 }' "$WORK/policy-vs.out")
fi

# ---- report ------------------------------------------------------------------------------
echo
echo "stormrig vs peers: nproc=$(nproc), generators on CPU $GEN_CPU, servers on CPU $SRV_CPU," \
    "$ROUNDS round(s) x ${DUR}s, alternating; medians of rounds."
echo "Note: the machine is shared; absolute figures are noisy, ratios within a round less so."
echo "Target rows: CPU-s/M is the server's CPU (nginx worker / stormrig target) per million answered."
[ -n "$OHA" ] || echo "oha: not installed (offline?): oha rows skipped."
echo
python3 "$HERE/table.py" "$RESULTS"
echo
python3 "$HERE/ratios.py" "$RESULTS"
echo
cat "$WORK/policy.out"
echo
grep -E '^(bench|configs|scale|attempts|events|thread_cpu_s|attempts_per_cpu_s|sim_speedup|target_attempts_per_cpu_s|target_met|layered_deepest_attempts_per_cpu_s)=' \
    "$WORK/sim.out" | paste -sd' '
if [ -n "$MEM_OUT" ]; then
    echo
    echo "Memory per request in flight (bytes: RSS growth / peak in flight, client and in-process"
    echo "target together for live rows; VmHWM - VmRSS before for the sim row).$([ "$QUICK" = 1 ] && echo " QUICK=1: smaller counts, a smoke run.")"
    printf '%-46s %-8s %10s %-16s %10s %9s %12s %7s\n' case protocol in-flight bound B/in-flight spread% growth-KiB run-s
    while IFS=$'\t' read -r c p n b bytes spread kib secs; do
        printf '%-46s %-8s %10s %-16s %10s %9s %12s %7s\n' "$c" "$p" "$n" "$b" "$bytes" "$spread" "$kib" "$secs"
    done <"$MEM_ROWS"
    echo
    cat "$MEM_OUT"
fi
if [ -s "$AIM_ROWS" ]; then
    echo
    echo "Aims: figures that do not move with the host (a benchmark reports; it is no CI gate)."
    python3 "$HERE/aims.py" "$AIM_ROWS"
    [ -s "$WORK/policy-vs.out" ] && { echo; cat "$WORK/policy-vs.out"; }
fi
