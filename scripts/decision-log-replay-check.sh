#!/usr/bin/env bash
# Issue 37's end-to-end check on real traffic: a load run records every decision (and shadows a candidate), the
# records are pulled with `policy log pull`, and `policy replay` decides them again:
#   - under the policy that made them: zero flips;
#   - under the candidate: exactly the shadow's disagreements (GET /v1/operator/shadow), action by action;
# then the pulled file is repeated to 1,000,000 records and replayed on one core (the target: under 10 s).
#
#   scripts/decision-log-replay-check.sh [RECORDS]   (default 100000; BIN=path/to/policy to skip the release build)
#   DATABASE=postgres://...                          the store (default: a fresh SQLite file)
# Exits 1 when a check fails. The load is wrk with a Lua script drawing tier, action and sources per request.
set -euo pipefail
cd "$(dirname "$0")/.."
WANT="${1:-100000}"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk"; exit 1; }
export PATH=/opt/swift/usr/bin:$PATH
if [ -z "${BIN:-}" ]; then
  swift build -c release --scratch-path .build-release --product policy >/dev/null
  BIN=.build-release/release/policy
fi
WORK="$(mktemp -d)"
SERVER=""
trap 'kill "$SERVER" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
cp -r policies/research-crawler "$WORK/live"
# The candidate lowers the free tier's sources limit (50 -> 40) and gives AI suggestions to free.
. scripts/lib/candidate.sh
shadow_candidate "$WORK/candidate"
printf 'operator-credential-%s\n' "$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$WORK/operator.token"
# Only this run's records are pulled: a PostgreSQL database used before holds other runs' records (decided under other
# candidates), which the checks below would count as flips.
STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
sleep 1
"$BIN" serve --policies "$WORK/live" --database "${DATABASE:-$WORK/identity.sqlite}" --trust-caller-subjects \
  --decision-log all --decision-log-limit 1000000000/60 --shadow "$WORK/candidate" --operator-token-file "$WORK/operator.token" \
  --host 127.0.0.1 --port 0 > "$WORK/out" 2> "$WORK/server.log" &
SERVER=$!
for _ in $(seq 1 300); do grep -q '^listening on ' "$WORK/out" 2>/dev/null && break; sleep 0.1; done
URL="$(sed -n 's/^listening on //p' "$WORK/out" | head -1)"
[ -n "$URL" ] || { echo "the server did not start"; cat "$WORK/server.log"; exit 1; }
cat > "$WORK/mix.lua" <<'EOF'
local tiers = {"free", "free", "pro", "academic", "team"}
local actions = {"add_source", "ai_suggestions", "cloud_sync", "collaboration", "advanced_export"}
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
math.randomseed(37)
request = function()
  local body = string.format(
    '{"subject":{"id":"user-%d","tier":"%s","auth":{"method":"pin","verifiedAt":"2026-11-22T11:58:00Z"}},"action":"%s","resource":{"type":"app","usage":{"sources":%d}}}',
    math.random(1, 5000), tiers[math.random(#tiers)], actions[math.random(#actions)], math.random(0, 70))
  return wrk.format(nil, "/v1/decide", nil, body)
end
EOF
metric() { curl -s "$URL/metrics" | awk -v name="$1" '$1 == name {s += $2} END {print s + 0}'; }
echo "loading until $WANT decisions are recorded ($URL, $BIN)"
# Each run is followed by a wait for the recorder's queue to empty, so nothing is dropped (the shadow and the log see
# the same decisions only when neither drops; the drops are checked below).
while [ "$(metric 'gatehouse_decision_log_written_total')" -lt "$WANT" ]; do
  wrk -t1 -c4 -d5s -s "$WORK/mix.lua" "$URL" | awk '/^Requests\/sec:/ {printf "  %s req/s", $2}'
  before=-1; now="$(metric 'gatehouse_decision_log_written_total')"
  while [ "$now" != "$before" ]; do sleep 1; before="$now"; now="$(metric 'gatehouse_decision_log_written_total')"; done
  echo ", $now recorded"
done
dropped="$(curl -s "$URL/metrics" | awk '$1 ~ /^gatehouse_(decision_log|shadow)_dropped_total/ {s += $2} END {print s + 0}')"
"$BIN" log pull --server "$URL" --operator-token-file "$WORK/operator.token" --max 100000000 --from "$STARTED" -o "$WORK/decisions.jsonl"
curl -s -H "Authorization: Bearer $(cat "$WORK/operator.token")" "$URL/v1/operator/shadow" > "$WORK/shadow.json"
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
records="$(wc -l < "$WORK/decisions.jsonl")"
echo "pulled $records records (dropped by the recorder or the shadow: $dropped)"
[ "$dropped" = 0 ] || { echo "FAILED: records or shadow decisions were dropped, so the two cannot be compared exactly"; exit 1; }
"$BIN" replay "$WORK/decisions.jsonl" --policies "$WORK/live" --format json > "$WORK/same.json"
"$BIN" replay "$WORK/decisions.jsonl" --policies "$WORK/candidate" --format json > "$WORK/changed.json"
python3 - "$WORK/same.json" "$WORK/changed.json" "$WORK/shadow.json" "$records" <<'EOF'
import collections, json, sys
same, changed, shadow = (json.load(open(p)) for p in sys.argv[1:4])
records = int(sys.argv[4])
def flips(report):
    counts = collections.Counter()
    for g in report["groups"]:
        counts[(g["action"], g["from"], g["to"])] += g["count"]
    return counts
ok = True
print(f"replay under the live policy: {same['replayed']} replayed, {same['unreadableCount']} unreadable, {sum(flips(same).values())} flips")
if same["replayed"] != records or sum(flips(same).values()) != 0: ok = False
shadowed = collections.Counter({(r["action"], r["live"], r["shadow"]): r["count"] for r in shadow["byAction"]})
replayed = flips(changed)
print(f"shadow: {shadow['decisions']} decisions, {shadow['disagreements']} disagreements; replay under the candidate: {sum(replayed.values())} flips")
for key in sorted(set(shadowed) | set(replayed)):
    mark = "" if shadowed[key] == replayed[key] else "   <- differs"
    print(f"  {key[0]:16} {key[1]:>18} -> {key[2]:<18} shadow {shadowed[key]:>7}  replay {replayed[key]:>7}{mark}")
if shadowed != replayed or shadow["decisions"] != records: ok = False
print("OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
EOF
# One core, 1,000,000 records: the pulled file repeated.
: > "$WORK/million.jsonl"
while [ "$(wc -l < "$WORK/million.jsonl")" -lt 1000000 ]; do cat "$WORK/decisions.jsonl" >> "$WORK/million.jsonl"; done
head -n 1000000 "$WORK/million.jsonl" > "$WORK/m.jsonl"
start=$(date +%s.%N)
taskset -c 0 "$BIN" replay "$WORK/m.jsonl" --policies "$WORK/candidate" --format json > /dev/null
echo "policy replay of 1,000,000 records on one core: $(echo "$(date +%s.%N) - $start" | bc | xargs printf '%.2f') s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
