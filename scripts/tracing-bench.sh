#!/usr/bin/env bash
# HTTP decide with tracing off, and exported at ratio 1.0 and 0.01 (issue 39): one wrk run each against a release
# `policy serve`, the spans going over OTLP/HTTP to a local nginx that answers 200 to every export (the collector's
# cost is not the server's). A benchmark, not a test: wall clock on a shared machine.
#
#   scripts/tracing-bench.sh [SECONDS]     (default 10 per run)
#   BIN=path/to/policy   a binary already built (default: .build-release/release/policy, built if missing)
#   ROUTE=bearer         decide with a bearer token instead of a caller-named subject
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-10}"
export PATH=/opt/swift/usr/bin:$PATH
if [ -z "${BIN:-}" ]; then
  BIN=.build-release/release/policy
  [ -x "$BIN" ] || swift build -c release --scratch-path .build-release --product policy >/dev/null
fi
command -v wrk >/dev/null && command -v nginx >/dev/null || { echo "needs wrk and nginx"; exit 1; }
WORK="$(mktemp -d)"
SERVER=""; NGINX=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; [ -n "$NGINX" ] && kill "$NGINX" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT

# The collector: nginx, answering 200 to every POST /v1/traces without reading more than it must.
SINK_PORT=$((20000 + RANDOM % 20000))
mkdir -p "$WORK/nginx/logs"
cat > "$WORK/nginx.conf" <<NGINX_EOF
daemon off;
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx/body; proxy_temp_path $WORK/nginx/proxy; fastcgi_temp_path $WORK/nginx/fastcgi;
  uwsgi_temp_path $WORK/nginx/uwsgi; scgi_temp_path $WORK/nginx/scgi;
  client_max_body_size 64m;
  server { listen 127.0.0.1:$SINK_PORT; location / { return 200; } }
}
NGINX_EOF
nginx -p "$WORK/nginx" -c "$WORK/nginx.conf" &
NGINX=$!

ONE='{"subject":{"id":"u1","tier":"free"},"action":"add_source","resource":{"type":"app","usage":{"sources":49}}}'
run() {  # $1 label, then environment assignments for the server
  local label="$1"; shift
  env "$@" "$BIN" serve --policies policies/research-crawler --database "$WORK/$label.sqlite" --trust-caller-subjects \
    --sign-in-limit 1000000/60 --host 127.0.0.1 --port 0 --max-connections-per-client 100000 > "$WORK/$label.out" 2> "$WORK/$label.log" &
  SERVER=$!
  for _ in $(seq 1 300); do grep -q '^listening on ' "$WORK/$label.out" 2>/dev/null && break; sleep 0.1; done
  local url; url="$(sed -n 's/^listening on //p' "$WORK/$label.out" | head -1)"
  [ -n "$url" ] || { echo "the server did not start"; cat "$WORK/$label.log"; exit 1; }
  local body="$ONE" auth=""
  if [ "${ROUTE:-}" = bearer ]; then
    body='{"action":"ai_suggestions","resource":{"type":"app"}}'
    auth="$(curl -s -X POST "$url/v1/auth/anonymous" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
  fi
  { echo 'wrk.method = "POST"'; echo "wrk.body = '$body'"; echo 'wrk.headers["Content-Type"] = "application/json"'
    [ -n "$auth" ] && echo "wrk.headers[\"Authorization\"] = \"Bearer $auth\""; true; } > "$WORK/decide.lua"
  wrk -t1 -c16 -d"${SECS}s" --latency -s "$WORK/decide.lua" "$url/v1/decide" > "$WORK/$label.txt"
  local rate p50 p99 non2xx
  rate="$(awk '/^Requests\/sec:/ {print $2}' "$WORK/$label.txt")"
  p50="$(awk '$1 == "50%" {print $2}' "$WORK/$label.txt")"
  p99="$(awk '$1 == "99%" {print $2}' "$WORK/$label.txt")"
  non2xx="$(awk '/Non-2xx/ {print $NF}' "$WORK/$label.txt")"
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
  printf '%-10s %12s req/s   p50 %-9s p99 %-9s non-2xx %s   load %s\n' "$label" "$rate" "$p50" "$p99" "${non2xx:-0}" "$(cut -d' ' -f1 /proc/loadavg)"
  eval "RATE_${label//./_}=$rate"
}
ENDPOINT="http://127.0.0.1:$SINK_PORT"
echo "wrk -t1 -c16, ${SECS}s per run, route ${ROUTE:-caller-subject} /v1/decide, load average $(cut -d' ' -f1-3 /proc/loadavg)"
run off OTEL_SERVICE_NAME=bench
run ratio1 OTEL_EXPORTER_OTLP_ENDPOINT="$ENDPOINT" OTEL_TRACES_SAMPLER_ARG=1.0
run ratio0.01 OTEL_EXPORTER_OTLP_ENDPOINT="$ENDPOINT" OTEL_TRACES_SAMPLER_ARG=0.01
awk -v off="$RATE_off" -v one="$RATE_ratio1" -v hundredth="$RATE_ratio0_01" \
  'BEGIN { printf "ratio 1.0 / off: %.2fx   ratio 0.01 / off: %.2fx\n", one / off, hundredth / off }'
