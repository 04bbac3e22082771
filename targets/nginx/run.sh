#!/bin/sh
# Starts or stops Debian's nginx as stormrig's real target.
#   targets/nginx/run.sh start PREFIX_DIR PORT [TLS_PORT H2C_PORT]
#                                                # writes PREFIX_DIR/nginx.conf, starts nginx
#   targets/nginx/run.sh stop  PREFIX_DIR        # stops the nginx whose pid is in PREFIX_DIR
# nginx listens on 127.0.0.1:PORT with 1 worker. With TLS_PORT and H2C_PORT it also serves
# HTTPS (HTTP/1.1 and HTTP/2 by ALPN) on 127.0.0.1:TLS_PORT with the certificate and key the
# caller put in PREFIX_DIR/tls.crt and PREFIX_DIR/tls.key (PEM; the tests make them at test
# time), and HTTP/2 in clear (prior knowledge) on 127.0.0.1:H2C_PORT, the same answers on
# every listener; TLS_PORT "-" serves h2c alone (no certificate needed). Access log: PREFIX_DIR/access.log, format
#   "$http_x_stormrig_request $http_x_stormrig_attempt $status $request_method $request_uri $msec $http_idempotency_key $http_x_stormrig_config $http_x_stormrig_run $server_protocol"
# NGINX_ACCESS_LOG=off turns the access log off (peer benchmarks: a log line per request
# costs nginx a write per request that wrk-vs-nginx figures elsewhere do not pay).
# Install: apt-get update && apt-get install -y nginx
set -eu

NGINX="${NGINX:-/usr/sbin/nginx}"
HERE="$(cd "$(dirname "$0")" && pwd)"

usage() {
    echo "usage: $0 start PREFIX_DIR PORT | stop PREFIX_DIR" >&2
    exit 2
}

[ $# -ge 2 ] || usage
cmd="$1"
prefix="$2"

case "$cmd" in
start)
    [ $# -eq 3 ] || [ $# -eq 5 ] || usage
    port="$3"
    tls_port="${4:-}"
    h2c_port="${5:-}"
    if [ ! -x "$NGINX" ]; then
        echo "nginx not found at $NGINX; install it: apt-get update && apt-get install -y nginx" >&2
        exit 3
    fi
    mkdir -p "$prefix/tmp" "$prefix/logs"
    prefix="$(cd "$prefix" && pwd)"
    if [ "$(id -u)" = 0 ]; then
        user="user root;"
    else
        user=""
    fi
    if [ "${NGINX_ACCESS_LOG:-on}" = off ]; then
        access_log="access_log off;"
    else
        access_log="access_log $prefix/access.log stormrig;"
    fi
    if [ "$tls_port" = - ]; then
        listen_more="listen 127.0.0.1:$h2c_port http2;"
    elif [ -n "$tls_port" ]; then
        if [ ! -s "$prefix/tls.crt" ] || [ ! -s "$prefix/tls.key" ]; then
            echo "TLS_PORT given but $prefix/tls.crt or $prefix/tls.key is missing" >&2
            exit 2
        fi
        listen_more="listen 127.0.0.1:$tls_port ssl http2; listen 127.0.0.1:$h2c_port http2; ssl_certificate $prefix/tls.crt; ssl_certificate_key $prefix/tls.key;"
    else
        listen_more=""
    fi
    sed -e "s|@ACCESS_LOG@|$access_log|g" -e "s|@PREFIX@|$prefix|g" -e "s|@PORT@|$port|g" \
        -e "s|@USER@|$user|g" -e "s|@LISTEN_MORE@|$listen_more|g" \
        "$HERE/nginx.conf.template" >"$prefix/nginx.conf"
    : >"$prefix/access.log"
    "$NGINX" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log"
    # The master binds the listener before it daemonizes; the pid file marks it ready.
    i=0
    while [ $i -lt 100 ]; do
        if [ -s "$prefix/nginx.pid" ]; then
            exit 0
        fi
        i=$((i + 1))
        sleep 0.05
    done
    echo "nginx did not start; see $prefix/error.log" >&2
    exit 1
    ;;
stop)
    if [ -s "$prefix/nginx.pid" ]; then
        pid="$(cat "$prefix/nginx.pid")"
        kill -TERM "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
            i=$((i + 1))
            sleep 0.05
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    ;;
*)
    usage
    ;;
esac
