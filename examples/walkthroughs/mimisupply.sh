#!/usr/bin/env bash
# mimisupply (seed 002): browse signed out, sign in at checkout, checkout by app role.
# Server: policy serve --policies policies/mimisupply --operator-token-file ...
. "$(dirname "$0")/lib.sh"
: "${GATEHOUSE_OPERATOR:?set it to the operator token (the app backend)}"

# Explore first: browsing needs no account; checkout asks to sign in.
call POST /v1/decide '{"action": "browse", "resource": {"type": "marketplace"}}'
expect 200 decision=allow
call POST /v1/decide '{"action": "checkout", "resource": {"type": "marketplace"}}'
expect 200 decision=deny reason=unauthenticated

# Sign in (username + PIN here; Sign in with Apple is POST /v1/auth/apple/nonce, then /v1/auth/apple).
NAME="walk$RANDOM$RANDOM"
call POST /v1/auth/pin/register "{\"username\": \"$NAME\", \"pin\": \"4826\"}"
expect 201
TOKEN="$(field accessToken)"; USER="$(field userId)"

# Signed in but with no app role yet: the answer names the role.
call POST /v1/decide '{"action": "checkout", "resource": {"type": "marketplace"}}' "$TOKEN"
expect 200 decision=deny reason=role_required

# Roles are set by the backend (operator), never by the app.
call PUT "/v1/operator/users/$USER/roles" '{"roles": ["customer"]}' "$TOKEN"
expect 401 code=operator_credential_required
call PUT "/v1/operator/users/$USER/roles" '{"roles": ["customer"]}' "$GATEHOUSE_OPERATOR"
expect 204
call POST /v1/check '{"resource": {"type": "marketplace"}, "actions": ["browse", "checkout", "driver_mode", "admin_console"]}' "$TOKEN"
expect 200 decisions.checkout.decision=allow decisions.driver_mode.reason=role_required decisions.admin_console.decision=deny
echo "mimisupply: ok ($STEP steps)"
