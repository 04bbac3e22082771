#!/usr/bin/env bash
# Regenerates the shipped incident (scenarios/recorded-incident.toml replays it):
#
#   bash scenarios/recordings/make-incident.sh [path/to/stormrig]
#
# nginx is the service: it answers 200, except that from second 20 to second 34 of each
# minute it answers 503 to half the requests (split_clients on $request_id: a fault
# schedule written in nginx's own configuration). A naive client fleet (stormrig's `naive`
# preset: 4 attempts, no backoff) sends 40 req/s of Poisson callers at it for 50 s, started
# at the top of a minute, so the fault is the run's 20 s to 35 s. nginx logs every request
# it received, retries included, as JSON with `$msec` and the fleet's request id
# (x-stormrig-request: a retry carries its first attempt's), and this script derives from
# that log what a Prometheus server scraping nginx would answer to two range queries:
#
#   incident-access.json    nginx's access log (the downstream's own record)
#   incident-rates.json     sum(rate(http_requests_total[1s])), step 1s        (query_range)
#   incident-errors.json    sum(rate(..{code="503"}[5s])) / sum(rate(..[5s])), step 5s
#
# The two query_range answers are computed from the log by this script (no Prometheus
# runs here); their shape is the one /api/v1/query_range returns. Needs nginx and python3.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
stormrig="${1:-$here/../../target/release/stormrig}"
nginx="${NGINX:-/usr/sbin/nginx}"
work="$(mktemp -d)"
trap '[ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null; rm -rf "$work"' EXIT
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
mkdir -p "$work/tmp" "$work/logs"
user=""; [ "$(id -u)" = 0 ] && user="user root;"
cat > "$work/nginx.conf" <<EOF
$user
worker_processes 1;
daemon on;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 1024; }
http {
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    keepalive_requests 1000000;
    log_format incident escape=json '{"msec":"\$msec","request_method":"\$request_method","request_uri":"\$request_uri","status":"\$status","request_id":"\$http_x_stormrig_request"}';
    access_log $work/access.json incident;
    # The fault schedule: seconds 20 to 34 of the minute, half of the requests.
    map \$time_iso8601 \$in_fault { "~T\\d\\d:\\d\\d:(2\\d|3[0-4])" 1; default 0; }
    split_clients "\${request_id}" \$coin { 50% 1; * 0; }
    map "\$in_fault\$coin" \$fail { "11" 1; default 0; }
    server {
        listen 127.0.0.1:$port;
        location / {
            if (\$fail) { return 503 "unavailable\n"; }
            return 200 "ok\n";
        }
    }
}
EOF
"$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/error.log"
cat > "$work/fleet.toml" <<EOF
name = "incident-fleet"
seed = 42
duration = "50s"
drain = "5s"

[load]
kind = "poisson"
rate = 40.0
path = "/api/payments"

[target]
url = "http://127.0.0.1:$port"

[[configs]]
preset = "naive"
EOF
# Start at the top of a minute, so nginx's fault seconds are the run's 20 s to 35 s.
python3 -c 'import time; time.sleep(60 - time.time() % 60)'
"$stormrig" run "$work/fleet.toml" --out "$work/run" --quiet > /dev/null
sleep 1
python3 - "$work/access.json" "$here" <<'PY'
import json, sys
log, out = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(log)]
t0 = float(lines[0]["msec"])
per_s, fails = {}, {}
for l in lines:
    s = int(float(l["msec"]) - t0)
    per_s[s] = per_s.get(s, 0) + 1
    fails[s] = fails.get(s, 0) + (l["status"] == "503")
seconds = range(0, max(per_s) + 1)
def answer(metric, values):
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": metric, "values": [[round(t0 + s, 3), v] for s, v in values]}]}}
rates = [(s, str(per_s.get(s, 0))) for s in seconds]
def share(a):
    n = sum(per_s.get(s, 0) for s in range(a, a + 5))
    return "%.4f" % (sum(fails.get(s, 0) for s in range(a, a + 5)) / n if n else 0)
errors = [(a, share(a)) for a in range(0, max(per_s) + 1, 5)]
json.dump(answer({"job": "payments"}, rates), open(out + "/incident-rates.json", "w"), indent=1)
json.dump(answer({"job": "payments"}, errors), open(out + "/incident-errors.json", "w"), indent=1)
with open(out + "/incident-access.json", "w") as f:
    f.write(open(log).read())
print(f"{len(lines)} requests logged, {sum(fails.values())} answered 503, {len(per_s)} s")
PY
