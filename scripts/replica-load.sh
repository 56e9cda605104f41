#!/usr/bin/env bash
# Load figures for replicas (docs/deploy.md): decide-by-token (/v1/decide with a bearer) and PIN sign-in,
# rate and p50/p99, first against one `policy serve` directly, then against two replicas on the same
# database behind nginx (examples/deploy/nginx.conf). wrk and nginx from Debian's packages, loopback only.
#
#   scripts/replica-load.sh [SECONDS_PER_RUN] [DATABASE]
#
# SECONDS_PER_RUN defaults to 10. DATABASE is a SQLite file or a postgres:// URL (an empty database the
# replicas may migrate; e.g. one made in the cluster of scripts/postgres-test-cluster.sh); default a fresh
# SQLite file in a temporary folder. PIN sign-ins rotate over 4 users per connection. REPLICAS (default 2) sets how many
# replicas the balanced setup runs. Each run also prints the CPU each part spent per request (the replicas, nginx,
# PostgreSQL's processes, wrk), read from /proc before and after: the inputs of docs/scaling.md's capacity model. CONFIG=debug for a debug build (default release, which must be built:
# swift build -c release --product policy). CONNS (default 16) and PIN_CONNS (default 4) set wrk's
# connections; POLICY_BIN names another `policy` binary. Bounded: four wrk runs per setup, each SECONDS_PER_RUN long.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-10}"
CONFIG="${CONFIG:-release}"
CONNS="${CONNS:-16}"
REPLICAS="${REPLICAS:-2}"
PIN_CONNS="${PIN_CONNS:-4}"
for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || { echo "$tool is missing: apt-get install $tool"; exit 1; }
done
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
export PATH=/opt/swift/usr/bin:$PATH
BIN="${POLICY_BIN:-$(swift build -c "$CONFIG" --show-bin-path)/policy}"
[ -x "$BIN" ] || { echo "no $BIN: swift build -c $CONFIG --product policy"; exit 1; }

WORK="$(mktemp -d)"
PIDS=()
REPLICA_PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
DATABASE="${2:-$WORK/identity.sqlite}"
cp -R policies/research-crawler "$WORK/policies"

start_replica() {  # $1 index; sets URL_<index>
  "$BIN" serve --policies "$WORK/policies" --trust-caller-subjects --database "$DATABASE" --host 127.0.0.1 --port 0 \
    --sign-in-limit 1000000/1 --trusted-proxy 127.0.0.1 > "$WORK/out$1" 2> "$WORK/replica$1.log" &
  PIDS+=($!)
  REPLICA_PIDS+=($!)
  for _ in $(seq 1 300); do grep -q '^listening on ' "$WORK/out$1" 2>/dev/null && break; sleep 0.1; done
  local url; url="$(sed -n 's/^listening on //p' "$WORK/out$1" | head -1)"
  [ -n "$url" ] || { echo "replica $1 did not start"; cat "$WORK/replica$1.log"; exit 1; }
  eval "URL_$1=$url"
}

post_script() {  # $1 file, $2 body, $3 bearer (optional)
  local body="${2//\\/\\\\}"; body="${body//\"/\\\"}"
  { echo 'wrk.method = "POST"'; echo "wrk.body = \"$body\""; echo 'wrk.headers["Content-Type"] = "application/json"'
    if [ -n "${3:-}" ]; then echo "wrk.headers[\"Authorization\"] = \"Bearer $3\""; fi; } > "$1"
}

# CPU (user + system, clock ticks) of processes: cpu_of PIDS... PostgreSQL's are the cluster's processes at each read,
# with what the postmaster's ended backends spent (cpu_with_reaped_of).
. scripts/lib/cpu.sh
postgres_pids() { case "$DATABASE" in postgres://*|postgresql://*) pgrep -x postgres || true ;; esac; }
nginx_pids() { pgrep -x nginx || true; }

run() {  # $1 label, $2 url, $3 lua, $4 connections
  local before_replicas before_nginx before_pg; before_replicas="$(cpu_of "${REPLICA_PIDS[@]}")"
  before_nginx="$(cpu_of $(nginx_pids))"; before_pg="$(cpu_with_reaped_of $(postgres_pids))"
  /usr/bin/time -f '%U %S' -o "$WORK/wrk.cpu" wrk -t1 -c"$4" -d"${SECS}s" --timeout 30s --latency -s "$3" "$2" > "$WORK/run.txt"
  local rate p50 p99 non2xx total errors
  rate="$(awk '/^Requests\/sec:/ {print $2}' "$WORK/run.txt")"
  total="$(awk '/requests in/ {print $1}' "$WORK/run.txt")"
  p50="$(awk '$1 == "50%" {print $2}' "$WORK/run.txt")"
  p99="$(awk '$1 == "99%" {print $2}' "$WORK/run.txt")"
  non2xx="$(awk '/Non-2xx/ {print $NF}' "$WORK/run.txt")"
  errors="$(sed -n 's/^ *Socket errors: *//p' "$WORK/run.txt")"
  printf '%-38s %10s req/s (%s)  p50 %-9s p99 %-9s non-2xx %s%s\n' "$1" "$rate" "$total" "$p50" "$p99" "${non2xx:-0}" \
    "${errors:+  socket errors: $errors}"
  local hz; hz="$(getconf CLK_TCK)"
  local replicas nginx pg; replicas=$(( $(cpu_of "${REPLICA_PIDS[@]}") - before_replicas ))
  nginx=$(( $(cpu_of $(nginx_pids)) - before_nginx )); pg=$(( $(cpu_with_reaped_of $(postgres_pids)) - before_pg ))
  python3 - "$total" "$hz" "$replicas" "$nginx" "$pg" "$(cat "$WORK/wrk.cpu")" <<'PY'
import sys
total, hz, replicas, nginx, pg = int(sys.argv[1]), int(sys.argv[2]), *map(int, sys.argv[3:6])
wrk = sum(map(float, sys.argv[6].split()))
us = lambda ticks: ticks / hz / total * 1e6
print(f"    CPU per request: replicas {us(replicas):.0f} us, nginx {us(nginx):.0f} us, postgres {us(pg):.0f} us, wrk {wrk / total * 1e6:.0f} us")
PY
}

# One replica: the user, a token, the two scripts.
start_replica 1
# Sign-ins rotate over 4 users per connection: the PIN throttle counts an attempt before its check, so
# concurrent sign-ins of one user would be refused (429) by design, not measured.
PIN=739164
USERS=$((PIN_CONNS * 4))
PREFIX="load$RANDOM$RANDOM"
{ echo 'local bodies = {}'
  for i in $(seq 1 "$USERS"); do
    curl -sf -X POST "$URL_1/v1/auth/pin/register" -H 'Content-Type: application/json' \
      -d "{\"username\":\"$PREFIX$i\",\"pin\":\"$PIN\"}" > "$WORK/register.json" || { echo "register failed" >&2; exit 1; }
    echo "bodies[$i] = '{\"username\":\"$PREFIX$i\",\"pin\":\"$PIN\"}'"
  done
  echo 'local n = 0'
  echo 'wrk.method = "POST"'
  echo 'wrk.headers["Content-Type"] = "application/json"'
  echo "request = function() n = n % $USERS + 1; return wrk.format(nil, nil, nil, bodies[n]) end"
} > "$WORK/pin.lua"
TOKEN="$(sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p' "$WORK/register.json")"
post_script "$WORK/bearer.lua" '{"action":"ai_suggestions","resource":{"type":"app"}}' "$TOKEN"

case "$DATABASE" in postgres://*|postgresql://*) KIND=postgres ;; *) KIND=sqlite ;; esac
echo "database: $KIND; $CONFIG build; wrk -t1, ${SECS}s per run; decide -c$CONNS, PIN sign-in -c$PIN_CONNS; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
run "one replica: decide by token" "$URL_1/v1/decide" "$WORK/bearer.lua" "$CONNS"
run "one replica: PIN sign-in" "$URL_1/v1/auth/pin/signin" "$WORK/pin.lua" "$PIN_CONNS"

# REPLICAS replicas on the same database behind nginx.
for i in $(seq 2 "$REPLICAS"); do start_replica "$i"; done
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
mkdir -p "$WORK/nginx"
UPSTREAMS=""
for i in $(seq 1 "$REPLICAS"); do url="URL_$i"; UPSTREAMS+="server ${!url#http://} max_fails=2 fail_timeout=5s; "; done
sed -e "s#@PREFIX@#$WORK/nginx#g" -e "s#@LISTEN@#127.0.0.1:$PORT#" -e "s#@UPSTREAMS@#$UPSTREAMS#" \
  examples/deploy/nginx.conf > "$WORK/nginx/nginx.conf"
"$NGINX" -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" -e "$WORK/nginx/error.log" &
PIDS+=($!)
LB="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do curl -sf "$LB/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf "$LB/healthz" >/dev/null || { echo "nginx did not start"; cat "$WORK/nginx/error.log"; exit 1; }
run "$REPLICAS replicas + nginx: decide by token" "$LB/v1/decide" "$WORK/bearer.lua" "$CONNS"
run "$REPLICAS replicas + nginx: PIN sign-in" "$LB/v1/auth/pin/signin" "$WORK/pin.lua" "$PIN_CONNS"
echo "requests per replica through nginx: $(grep -o 'upstream=[^ ]*' "$WORK/nginx/access.log" | sort | uniq -c | tr '\n' ' ')"
