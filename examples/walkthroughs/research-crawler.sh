#!/usr/bin/env bash
# research-crawler (seeds 000, 003): AI suggestions need Pro; the free tier's 50-source limit; a store
# purchase lifts both. Server: policy serve --policies policies/research-crawler --operator-token-file ...
. "$(dirname "$0")/lib.sh"
: "${GATEHOUSE_OPERATOR:?set it to the operator token (the app backend)}"

# An account (an anonymous session counts as signed out, so it is always on the free tier).
call POST /v1/auth/pin/register "{\"username\": \"reader$RANDOM$RANDOM\", \"pin\": \"4826\"}"
expect 201
TOKEN="$(field accessToken)"; USER="$(field userId)"

# Free: AI suggestions name the tier to upgrade to.
call POST /v1/decide '{"action": "ai_suggestions", "resource": {"type": "app"}}' "$TOKEN"
expect 200 decision=deny reason=requires_upgrade upgradeTo=pro

# One screen asks about several buttons at once.
call POST /v1/check '{"resource": {"type": "app"}, "actions": ["ai_suggestions", "add_source", "cloud_sync"]}' "$TOKEN"
expect 200 decisions.add_source.decision=allow decisions.cloud_sync.reason=requires_upgrade

# The backend counts sources as the user adds them (apps cannot lower their own usage).
call POST "/v1/operator/users/$USER/usage" '{"counter": "sources", "by": 49}' "$GATEHOUSE_OPERATOR"
expect 200 value=49
call POST /v1/decide '{"action": "add_source", "resource": {"type": "app"}}' "$TOKEN"
expect 200 decision=allow limit=50 used=49 remaining=1
call POST "/v1/operator/users/$USER/usage" '{"counter": "sources"}' "$GATEHOUSE_OPERATOR"
expect 200 value=50
call POST /v1/decide '{"action": "add_source", "resource": {"type": "app"}}' "$TOKEN"
expect 200 decision=deny reason=limit_exceeded limit=50 used=50 remaining=0 upgradeTo=pro

# A purchase lifts both. The app sends StoreKit 2's signed transaction to POST /v1/me/purchases
# (docs/identity.md); a walk-through has no App Store, so the back office records it for the user.
# The tier comes from the served policy's product mapping either way.
call PUT "/v1/operator/users/$USER/subscription" '{"productId": "com.researchapp.pro.monthly"}' "$GATEHOUSE_OPERATOR"
expect 204
call POST /v1/decide '{"action": "ai_suggestions", "resource": {"type": "app"}}' "$TOKEN"
expect 200 decision=allow reason=allowed
call POST /v1/decide '{"action": "add_source", "resource": {"type": "app"}}' "$TOKEN"
expect 200 decision=allow

# Privacy: source metadata leaves the device only with consent.
call POST /v1/decide '{"action": "send_source_metadata", "resource": {"type": "app"}}' "$TOKEN"
expect 200 decision=deny reason=consent_required
call PUT /v1/me/privacy '{"aiSuggestions": true, "dataSharing": "minimal"}' "$TOKEN"
expect 200 aiSuggestions=true
call POST /v1/decide '{"action": "send_source_metadata", "resource": {"type": "app"}}' "$TOKEN"
expect 200 decision=allow
echo "research-crawler: ok ($STEP steps)"
