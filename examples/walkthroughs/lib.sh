# Shared by the walk-throughs: call the API with curl and check every answer.
#   GATEHOUSE_URL      the server (default http://127.0.0.1:8080)
#   GATEHOUSE_OPERATOR the operator token (the app's backend), for the steps that need it
set -euo pipefail
URL="${GATEHOUSE_URL:-http://127.0.0.1:8080}"
STEP=0

# call METHOD PATH [BODY] [TOKEN]: sets STATUS and BODY.
call() {
  local method="$1" path="$2" body="${3:-}" token="${4:-}"
  local args=(-s -o "/tmp/gatehouse-walk.$$" -w '%{http_code}' -X "$method")
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data "$body")
  [ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
  STATUS="$(curl "${args[@]}" "$URL$path")"
  BODY="$(cat /tmp/gatehouse-walk.$$)"; rm -f /tmp/gatehouse-walk.$$
  STEP=$((STEP + 1))
  printf '%2d. %s %s -> %s %s\n' "$STEP" "$method" "$path" "$STATUS" "$BODY"
}

# field NAME: a top-level (or a.b dotted) field of BODY, as text.
field() {
  python3 -c 'import json, sys
v = json.loads(sys.argv[1])
for k in sys.argv[2].split("."): v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else (json.dumps(v) if isinstance(v, (dict, list, bool)) else v))' "$BODY" "$1"
}

# expect STATUS [FIELD=VALUE ...]: fails the walk-through at the first answer that differs.
expect() {
  local want="$1"; shift
  [ "$STATUS" = "$want" ] || { echo "FAIL step $STEP: status $STATUS, expected $want"; exit 1; }
  for pair in "$@"; do
    local name="${pair%%=*}" value="${pair#*=}" got
    got="$(field "$name")"
    [ "$got" = "$value" ] || { echo "FAIL step $STEP: $name is '$got', expected '$value'"; exit 1; }
  done
}
