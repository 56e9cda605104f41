import Crypto
import Foundation
import Identity

/// The server's side of the operator credential: the configured token is kept only as its digest
/// (`OperatorCredential.digest(of:)`, the form the identity layer checks too), compared in constant time.
public enum OperatorToken {
    /// The stored form of a configured credential (surrounding whitespace ignored); at least 16 characters.
    public static func digest(ofConfigured text: String) throws(ServerSettings.Problem) -> Data {
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.utf8.count >= 16 else {
            throw ServerSettings.Problem(description: "the operator token must be at least 16 characters")
        }
        return OperatorCredential.digest(of: token)
    }

    /// Whether `presented` is the credential whose digest is `stored`; the time taken does not depend on
    /// where they differ.
    public static func matches(_ presented: String, stored: Data) -> Bool {
        let digest = OperatorCredential.digest(of: presented)
        guard digest.count == stored.count else { return false }
        var diff: UInt8 = 0
        for (a, b) in zip(digest, stored) { diff |= a ^ b }
        return diff == 0
    }
}
