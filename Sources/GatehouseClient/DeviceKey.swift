public import Foundation
public import PolicyModel

#if canImport(CryptoKit)
internal import CryptoKit
#else
internal import Crypto
#endif

/// A P-256 signing key that stands for Face ID or Touch ID: the server keeps its public key (`enrollDevice`) and a
/// signature over a fresh challenge verifies the user at the `biometric` level (`verifyDevice`).
public protocol DeviceKey: Sendable {
    /// The public key, X9.63 (65 bytes, `04 || x || y`).
    var publicKey: Data { get }
    /// An ECDSA P-256 / SHA-256 signature over `challenge`, DER. A Secure Enclave key asks for Face ID here when its
    /// access control says so.
    func signature(for challenge: Data) throws -> Data
}

/// A P-256 key in memory (CryptoKit on Apple platforms, swift-crypto elsewhere): for tests, the command line and
/// devices without a Secure Enclave. Keep `rawRepresentation` in the Keychain to reuse it.
public struct SoftwareDeviceKey: DeviceKey, SecretRedacting {
    /// The private scalar; only `Data` is kept, so the key is `Sendable` whichever crypto library made it.
    private let scalar: Data
    public let publicKey: Data

    /// A new random key.
    public init() {
        let key = P256.Signing.PrivateKey()
        scalar = key.rawRepresentation
        publicKey = key.publicKey.x963Representation
    }

    /// A key from its 32-byte private scalar.
    public init(rawRepresentation: Data) throws {
        let key = try P256.Signing.PrivateKey(rawRepresentation: rawRepresentation)
        scalar = key.rawRepresentation
        publicKey = key.publicKey.x963Representation
    }

    /// The private scalar: a secret, store it only in the Keychain.
    public var rawRepresentation: Data { scalar }

    public func signature(for challenge: Data) throws -> Data {
        try P256.Signing.PrivateKey(rawRepresentation: scalar).signature(for: challenge).derRepresentation
    }

    /// The public key only, never the private one.
    public var shownFields: KeyValuePairs<String, Any> { ["publicKey": publicKey, "privateKey": Self.redacted] }
}

#if canImport(CryptoKit) && (os(iOS) || os(macOS))
public import Security

/// A P-256 key generated inside the Secure Enclave: the private key never leaves it, and with a `SecAccessControl`
/// of `.biometryCurrentSet` every signature asks for Face ID or Touch ID.
///
/// Keep `dataRepresentation` (an encrypted handle only this device's Secure Enclave can use) in the Keychain.
public struct SecureEnclaveDeviceKey: DeviceKey, CustomStringConvertible {
    /// The key's handle; the key is opened from it for each signature, so this value is plain `Sendable` data.
    public let dataRepresentation: Data
    public let publicKey: Data

    /// Whether this device has a Secure Enclave (use `SoftwareDeviceKey` where it has none).
    public static var isAvailable: Bool { SecureEnclave.isAvailable }

    /// A new key in the Secure Enclave, guarded by `accessControl`.
    public init(accessControl: SecAccessControl) throws {
        let key = try SecureEnclave.P256.Signing.PrivateKey(accessControl: accessControl)
        dataRepresentation = key.dataRepresentation
        publicKey = key.publicKey.x963Representation
    }

    /// The key whose handle `dataRepresentation` returned earlier.
    public init(dataRepresentation: Data) throws {
        let key = try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: dataRepresentation)
        self.dataRepresentation = dataRepresentation
        publicKey = key.publicKey.x963Representation
    }

    public func signature(for challenge: Data) throws -> Data {
        try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: dataRepresentation).signature(for: challenge).derRepresentation
    }

    public var description: String { "SecureEnclaveDeviceKey(<handle>)" }
}
#endif

/// SHA-256 of `text`, lower-case hex: the nonce digest Sign in with Apple's request carries.
func sha256Hex(_ text: String) -> String {
    SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
}
