import Crypto
import Foundation
import X509

/// Apple Root CA - G3, shipped in the binary: the root App Store signed transactions and App Store
/// Server Notifications V2 chain to, trusted only while its SHA-256 equals the pinned fingerprint.
public enum AppleRootCertificate {
    /// SHA-256 of the DER of Apple Root CA - G3, as Apple publishes it (hex, lower case).
    public static let pinnedFingerprint = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"

    /// The DER of Apple Root CA - G3 (https://www.apple.com/certificateauthority/AppleRootCA-G3.cer), base64.
    static let derBase64 =
        "MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcNMTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBSb290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9yaXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtfTjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySrMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gAMGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM6BgD56KyKA=="

    /// The shipped DER bytes.
    public static var der: Data { Data(base64Encoded: derBase64) ?? Data() }

    /// SHA-256 of the shipped DER, hex.
    public static var fingerprint: String { SecretCoding.hex(SHA256.hash(data: der)) }

    /// Whether the shipped DER is the pinned certificate (checked at start by `policy serve`, and by a test).
    public static var matchesPin: Bool { certificate != nil }

    /// The shipped root, parsed; nil (so nothing chains to it) unless its fingerprint is the pinned one.
    static let certificate: Certificate? = {
        guard SecretCoding.constantTimeEqual(Data(fingerprint.utf8), Data(pinnedFingerprint.utf8)) else { return nil }
        return try? Certificate(derEncoded: Array(der))
    }()
}
