#!/usr/bin/env bash
# contacasal (seed 001): an anonymous start, a shared space, a partner joining by code, the PIN unlock
# and step-up. Server: policy serve --policies policies/contacasal
#
# The client flow when an answer is `unauthenticated`: refresh first (POST /v1/auth/refresh); if the
# decision with the new access token is `step_up_required`, ask for the PIN (POST /v1/auth/pin/verify)
# and ask again with the token it returns.
. "$(dirname "$0")/lib.sh"

# Onboarding needs no account, then an anonymous session.
call POST /v1/decide '{"action": "create_space", "resource": {"type": "onboarding"}}'
expect 200 decision=allow
call POST /v1/auth/anonymous
expect 201
OWNER="$(field accessToken)"; OWNER_REFRESH="$(field refreshToken)"

call POST /v1/spaces '{"name": "Casa", "inviteRole": "partner"}' "$OWNER"
expect 201
SPACE="$(field resourceId)"; CODE="$(field shareCode)"
ROOM="{\"action\": \"view_dashboard\", \"resource\": {\"type\": \"space\", \"id\": \"$SPACE\"}}"

# Anonymous is not enough to see the space: the answer leads to the PIN.
call POST /v1/decide "$ROOM" "$OWNER"
expect 200 decision=deny reason=unauthenticated
call PUT /v1/auth/pin '{"pin": "4826"}' "$OWNER"
expect 200 method=pin rotated=true
OWNER="$(field accessToken)"
call POST /v1/decide "$ROOM" "$OWNER"
expect 200 decision=allow

# The partner: anonymous, a PIN, not yet a member; joins by code; may add an expense.
call POST /v1/auth/anonymous
expect 201
PARTNER="$(field accessToken)"
call PUT /v1/auth/pin '{"pin": "7391"}' "$PARTNER"
expect 200 rotated=true
PARTNER="$(field accessToken)"
EXPENSE="{\"action\": \"add_expense\", \"resource\": {\"type\": \"space\", \"id\": \"$SPACE\"}}"
call POST /v1/decide "$EXPENSE" "$PARTNER"
expect 200 decision=deny reason=not_member
call POST /v1/spaces/join "{\"shareCode\": \"$CODE\"}" "$PARTNER"
expect 200 resourceId="$SPACE"
call POST /v1/decide "$EXPENSE" "$PARTNER"
expect 200 decision=allow

# Only the owner removes a partner, and only with a fresh PIN.
REMOVE="{\"action\": \"remove_partner\", \"resource\": {\"type\": \"space\", \"id\": \"$SPACE\"}}"
call POST /v1/decide "$REMOVE" "$PARTNER"
expect 200 decision=deny reason=owner_only
call POST /v1/check "{\"resource\": {\"type\": \"space\", \"id\": \"$SPACE\"}, \"actions\": [\"remove_partner\", \"view_share_code\"]}" "$OWNER"
expect 200 decisions.remove_partner.decision=allow decisions.view_share_code.decision=allow

# Step-up at the same level keeps the token; a wrong PIN is refused without echoing it.
call POST /v1/auth/pin/verify '{"pin": "4826"}' "$OWNER"
expect 200 rotated=false
call POST /v1/auth/pin/verify '{"pin": "5173"}' "$OWNER"
expect 401 code=invalid_credentials
case "$BODY" in *5173*) echo "FAIL: the PIN was echoed"; exit 1 ;; esac

# The refresh leg of the flow: the refresh token of the first session still rotates.
call POST /v1/auth/refresh "{\"refreshToken\": \"$OWNER_REFRESH\"}"
expect 200
echo "contacasal: ok ($STEP steps)"
