#!/usr/bin/env bash
# Runs schemathesis (PyPI, in a venv) against a live `policy serve` on loopback, over docs/openapi.yaml.
#
#   scripts/api-fuzz.sh [MAX_EXAMPLES] [SCHEMATHESIS OPTIONS...]   (default 50 per operation)
#   BIN=path/to/policy   a binary already built (a before/after comparison; default: the debug build, built if missing)
#
# Starts the server on a free loopback port with the contacasal policy set, a fresh database and an
# operator token, runs every operation of the spec, prints schemathesis's summary and stops the server.
# Bounded: schemathesis's own per-request timeout and a 15-minute cap on the whole run.
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_EXAMPLES="${1:-50}"
VENV="${GATEHOUSE_FUZZ_VENV:-.build-api-fuzz/venv}"
WORK="$(mktemp -d)"
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT

if [ ! -x "$VENV/bin/schemathesis" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q schemathesis
fi
export PATH=/opt/swift/usr/bin:$PATH
if [ -z "${BIN:-}" ]; then
  swift build --product policy >/dev/null
  BIN="$(swift build --show-bin-path)/policy"
fi

echo "operator-token-for-api-fuzz-0001" > "$WORK/operator"
# Purchases are configured (a bundle id of no real app), so the purchase and notification routes run their JWS
# verification on what schemathesis sends instead of answering 501 purchases_not_configured.
"$BIN" serve --policies policies/contacasal --trust-caller-subjects --database "$WORK/identity.sqlite" --host 127.0.0.1 --port 0 \
  --operator-token-file "$WORK/operator" --app-store-bundle-id com.gatehouse.api-fuzz --app-store-environment Sandbox \
  > "$WORK/out" 2> "$WORK/server.log" &
SERVER=$!
for _ in $(seq 1 100); do
  grep -q '^listening on ' "$WORK/out" 2>/dev/null && break
  sleep 0.1
done
URL="$(sed -n 's/^listening on //p' "$WORK/out" | head -1)"
[ -n "$URL" ] || { echo "the server did not start"; cat "$WORK/server.log"; exit 1; }
echo "server: $URL"

# Rate limits would turn most sign-in examples into 429s; schemathesis still checks those answers
# against the spec. Every check runs: status codes documented, bodies matching their schemas,
# content types, no 5xx.
timeout 900 "$VENV/bin/schemathesis" run docs/openapi.yaml --url "$URL" \
  --checks all --max-examples "$MAX_EXAMPLES" --request-timeout 10 \
  --header "X-Fuzz: 1" "${@:2}" | tee "$WORK/report" || STATUS=$?
echo "server log lines with level error: $(grep -c ' error ' "$WORK/server.log" || true)"
exit "${STATUS:-0}"
