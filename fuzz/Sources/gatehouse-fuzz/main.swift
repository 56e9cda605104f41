// One binary for every libFuzzer target (issue 42): `gatehouse-fuzz TARGET [libFuzzer arguments]`. One SwiftPM
// build and one link serve the smoke step and every campaign, where fifteen products took fifteen builds.
// scripts/fuzz.sh names the same targets; docs/testing.md says what each one checks.
import FuzzSupport
import fuzz_app_store_jws
import fuzz_apple_identity_token
import fuzz_bundle
import fuzz_bundle_events
import fuzz_bundle_roundtrip
import fuzz_cursor
import fuzz_device_challenge
import fuzz_expression
import fuzz_plan_sql
import fuzz_policy_compile
import fuzz_postgres_url
import fuzz_replay_records
import fuzz_request
import fuzz_session_device
import fuzz_yaml_safety

runFuzzer(choosingFrom: [
    "policy-compile": { raw in _ = withBytes(raw, fuzzPolicyCompile) },
    "expression": { raw in _ = withBytes(raw, fuzzExpression) },
    "request": { raw in _ = withBytes(raw, fuzzRequest) },
    "bundle": fuzzBundle,
    "bundle-roundtrip": fuzzBundleRoundtrip,
    "app-store-jws": fuzzAppStoreJWS,
    "apple-identity-token": fuzzAppleIdentityToken,
    "device-challenge": fuzzDeviceChallenge,
    "cursor": fuzzCursor,
    "postgres-url": fuzzPostgresURL,
    "session-device": fuzzSessionDevice,
    "yaml-safety": fuzzYAMLSafety,
    "bundle-events": fuzzBundleEvents,
    "replay-records": fuzzReplayRecords,
    "plan-sql": fuzzPlanSQL,
])
