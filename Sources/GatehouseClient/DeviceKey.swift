public import Foundation

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
public struct SoftwareDeviceKey: DeviceKey, CustomStringConvertible {
    private let key: P256.Signing.PrivateKey

    /// A new random key.
    public init() { key = P256.Signing.PrivateKey() }

    /// A key from its 32-byte private scalar.
    public init(rawRepresentation: Data) throws { key = try P256.Signing.PrivateKey(rawRepresentation: rawRepresentation) }

    /// The private scalar: a secret, store it only in the Keychain.
    public var rawRepresentation: Data { key.rawRepresentation }

    public var publicKey: Data { key.publicKey.x963Representation }

    public func signature(for challenge: Data) throws -> Data { try key.signature(for: challenge).derRepresentation }

    /// Never the private key.
    public var description: String { "SoftwareDeviceKey(<private>)" }
}

#if canImport(CryptoKit) && (os(iOS) || os(macOS))
public import Security

/// A P-256 key generated inside the Secure Enclave: the private key never leaves it, and with a `SecAccessControl`
/// of `.biometryCurrentSet` every signature asks for Face ID or Touch ID.
///
/// Keep `dataRepresentation` (an encrypted handle only this device's Secure Enclave can use) in the Keychain.
public struct SecureEnclaveDeviceKey: DeviceKey, CustomStringConvertible {
    private let key: SecureEnclave.P256.Signing.PrivateKey

    /// Whether this device has a Secure Enclave (use `SoftwareDeviceKey` where it has none).
    public static var isAvailable: Bool { SecureEnclave.isAvailable }

    /// A new key in the Secure Enclave, guarded by `accessControl`.
    public init(accessControl: SecAccessControl) throws {
        key = try SecureEnclave.P256.Signing.PrivateKey(accessControl: accessControl)
    }

    /// The key whose handle `dataRepresentation` returned earlier.
    public init(dataRepresentation: Data) throws {
        key = try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: dataRepresentation)
    }

    /// The key's handle for this device's Secure Enclave (not the key itself).
    public var dataRepresentation: Data { key.dataRepresentation }

    public var publicKey: Data { key.publicKey.x963Representation }

    public func signature(for challenge: Data) throws -> Data { try key.signature(for: challenge).derRepresentation }

    public var description: String { "SecureEnclaveDeviceKey(<handle>)" }
}
#endif

/// SHA-256 of `text`, lower-case hex: the nonce digest Sign in with Apple's request carries.
func sha256Hex(_ text: String) -> String {
    SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
}
