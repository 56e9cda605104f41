import Testing

@testable import Identity

/// The identity layer's wire names, spelled from case names (`SpelledCases`), pinned: each is stored (audit kinds),
/// exported (metrics), sent (problem codes) or Apple's (notification types), so renaming a case must fail here.
@Suite struct VocabularyTests {
    @Test func auditKindsAreStoredAsTheseNames() {
        #expect(AuditKind.allCases.map(\.rawValue) == [
            "sign_up", "sign_in", "sign_out", "sign_out_everywhere", "sessions_revoked", "refresh_token_reuse",
            "pin_verify", "pin_lockout", "pin_set", "pin_changed", "pin_reset", "pin_rehashed", "pin_unlocked", "failure_rate_alarm",
            "device_enrolled", "device_verify", "device_locked",
            "apple_linked", "apple_unlinked", "apple_notification", "credential_state_changed", "username_set",
            "space_created", "space_joined", "share_code_rejected",
            "subscription_changed", "app_store_purchase", "app_store_notification",
            "roles_changed", "privacy_changed", "data_export", "account_deleted", "logs_expired",
        ])
        #expect(AuditKind(rawValue: "refresh_token_reuse") == .refreshTokenReuse)
    }

    @Test func securityCountersAreExportedAsTheseNames() {
        #expect(SecurityCounters.Name.allCases.map(\.rawValue) == [
            "pin_failures", "refusals", "failure_rate_alarms", "coalesced_audit_rows", "apple_token_rejections", "erasure_cleanups_skipped",
        ])
    }

    @Test func notificationTypesAreApplesNames() {
        #expect(Set(AppStoreNotificationType.allCases.map(\.rawValue)) == [
            "DID_RENEW", "EXPIRED", "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "REFUND", "REVOKE",
        ])
        #expect(AppStoreNotificationType(rawValue: "DID_FAIL_TO_RENEW") == .didFailToRenew)
        #expect(AppStoreNotificationType(rawValue: "SUBSCRIBED") == nil)
    }

    @Test func errorCodesAreSentAsTheseNames() {
        #expect(IdentityError.Code.allCases.map(\.rawValue) == [
            "invalid_input", "unauthenticated", "invalid_credentials", "throttled", "locked", "token_rejected", "not_found", "conflict",
            "forbidden", "storage", "purchases_not_configured", "invalid_signed_transaction", "app_store_algorithm_not_es256",
            "app_store_signature_invalid", "app_store_untrusted_chain", "app_store_marker_missing", "app_store_certificate_expired",
            "app_store_wrong_bundle", "app_store_environment_not_allowed", "app_account_mismatch", "purchase_owned_elsewhere",
            "unknown_product", "storage_unavailable", "not_listable",
        ])
    }
}
