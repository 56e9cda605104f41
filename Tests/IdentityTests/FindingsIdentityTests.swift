import Foundation
import PolicyModel
import Testing

@testable import Identity

/// Issue 22, section 2, in the identity layer: F5 (username probes per source), F11 (invisible and
/// direction-changing characters in names) and a NUL byte in a resource id (a 400 on both stores).
@Suite(.storeScope) struct FindingsIdentityTests {
    static let invisible: [Unicode.Scalar] = [
        "\u{061C}", "\u{200E}", "\u{200F}", "\u{202A}", "\u{202B}", "\u{202C}", "\u{202D}", "\u{202E}", "\u{2066}", "\u{2067}", "\u{2068}",
        "\u{2069}", "\u{200B}", "\u{200C}", "\u{200D}", "\u{2060}", "\u{FEFF}",
    ]

    @Test(arguments: StoreKind.testable) func f11SpaceAndDisplayNamesRefuseBidiAndZeroWidthCharacters(store: StoreKind) async throws {
        let h = try await Harness(store)
        let owner = try await h.service.signInAnonymously(source: .inProcess)
        for scalar in Self.invisible {
            let name = "gpj." + String(Character(scalar)) + "exe"
            let error = await identityError { try await h.service.createSpace(accessToken: owner.accessToken, name: name, inviteRole: "editor") }
            #expect(error?.field == "name", "U+\(String(scalar.value, radix: 16))")
            #expect(await identityError { try await h.service.setUsername(accessToken: owner.accessToken, username: "ana" + String(Character(scalar))) }?.field == "username")
        }
        let (token, nonce) = try await h.appleToken()
        let error = await identityError { try await h.service.signInWithApple(identityToken: token, rawNonce: nonce, fullName: "Ana\u{202E}azuoS") }
        #expect(error?.field == "fullName")
        // Letters of any script, spaces and emoji stay welcome.
        _ = try await h.service.createSpace(accessToken: owner.accessToken, name: "Casa São João 家 🏠", inviteRole: "editor")
    }

    @Test(arguments: StoreKind.testable) func aNULInAResourceIdIsInvalidInputOnEitherStore(store: StoreKind) async throws {
        let h = try await Harness(store)
        let owner = try await h.service.signInAnonymously(source: .inProcess)
        let id = "a\u{0}b"
        #expect(await identityError { try await h.service.readDecisionFacts(accessTokenKey: h.service.cacheKey(accessToken: owner.accessToken), resourceId: id, at: h.clock.now) }?.code == .invalidInput)
        #expect(await identityError { try await h.service.newShareCode(accessToken: owner.accessToken, resourceId: id) }?.code == .invalidInput)
        #expect(await identityError { try await h.service.incrementUsage(resourceId: id, counter: "sources") }?.code == .invalidInput)
    }
}
