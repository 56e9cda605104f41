import PolicyModel
import Testing

@Suite struct SpelledCasesTests {
    @Test(arguments: [
        ("signUp", "sign_up", "SIGN_UP", "sign-up"),
        ("didFailToRenew", "did_fail_to_renew", "DID_FAIL_TO_RENEW", "did-fail-to-renew"),
        ("appleJWKS", "apple_jwks", "APPLE_JWKS", "apple-jwks"),
        ("ipv6Prefix", "ipv6_prefix", "IPV6_PREFIX", "ipv6-prefix"),
        ("appStoreAlgorithmNotES256", "app_store_algorithm_not_es256", "APP_STORE_ALGORITHM_NOT_ES256", "app-store-algorithm-not-es256"),
        ("invalidJSON", "invalid_json", "INVALID_JSON", "invalid-json"),
        ("refusals", "refusals", "REFUSALS", "refusals"),
        ("internal", "internal", "INTERNAL", "internal"),
    ])
    func spellsACaseNameAsSerdeWould(name: String, snake: String, screaming: String, kebab: String) {
        #expect(CaseSpelling.snake.spell(name) == snake)
        #expect(CaseSpelling.screamingSnake.spell(name) == screaming)
        #expect(CaseSpelling.kebab.spell(name) == kebab)
    }

    enum Sample: SpelledCases {
        static let spelling = CaseSpelling.snake
        case signUp, refreshTokenReuse
    }

    @Test func rawValuesRoundTripAndUnknownNamesAreNil() {
        #expect(Sample.allCases.map(\.rawValue) == ["sign_up", "refresh_token_reuse"])
        #expect(Sample.allCases.allSatisfy { Sample(rawValue: $0.rawValue) == $0 })
        #expect(Sample(rawValue: "signUp") == nil)
        #expect(Sample(rawValue: "SIGN_UP") == nil)
    }
}

@Suite struct SecretRedactingTests {
    @Test func aTokenPairShowsNeitherTokenPrintedReflectedOrDumped() {
        let pair = TokenPair(accessToken: "gha_secret-access", accessExpiresAt: .init(timeIntervalSince1970: 0), refreshToken: "ghr_secret-refresh", userId: "u1")
        var dumped = ""
        dump(pair, to: &dumped)
        for text in [String(describing: pair), String(reflecting: pair), "\(pair)", dumped] {
            #expect(!text.contains("secret"), "\(text)")
            #expect(text.contains("u1") && text.contains("<redacted>"), "\(text)")
        }
        #expect(String(describing: pair) == "TokenPair(userId: u1, accessExpiresAt: 1970-01-01T00:00:00Z, tokens: <redacted>)")
    }
}
