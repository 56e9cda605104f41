import Crypto
import Foundation
import FuzzSupport
import Identity

/// libFuzzer entry for the device-key readers: the device id check, the public key an app enrols (X9.63, raw or DER:
/// `IdentityService.devicePublicKey`) and the signature over a challenge (DER or raw: `deviceSignature`), then
/// ECDSA verification as `verifyDeviceSignature` does it. The first byte picks a mode:
/// - plain (0): a device id, a key and a signature, each a chunk of the bytes. A key that parses must read back the
///   same through its X9.63 form; no signature may verify a fixed challenge under a key the fuzzer supplied (nobody
///   holds its private half).
/// - signed (1): a fixed device key signs a fixed challenge; the bytes change the signature (its DER re-encoded, bytes
///   flipped, cut or padded) and maybe the challenge. A signature may verify only the challenge that was signed.
public func fuzzDeviceChallenge(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    if input.byte() % 2 == 0 {
        let id = input.string(max: 160)
        let keyBytes = Data(input.chunk())
        let signatureBytes = Data(input.rest())
        do {
            try IdentityService.validateDeviceId(id)
            if !(1...128).contains(id.utf8.count) || id.utf8.contains(where: { $0 < 0x21 || $0 > 0x7E }) { finding("accepted the device id \(Array(id.utf8))") }
        } catch {
            if error.field != "deviceId" { finding("a device id refusal names \(error.field)") }
        }
        guard let key = try? IdentityService.devicePublicKey(keyBytes) else { return }
        guard let again = try? IdentityService.devicePublicKey(key.x963Representation), again.rawRepresentation == key.rawRepresentation else {
            finding("a device key does not read back through its X9.63 form")
        }
        if let signature = IdentityService.deviceSignature(signatureBytes), key.isValidSignature(signature, for: Device.challenge) {
            finding("a signature verified under a key the fuzzer supplied")
        }
        return
    }
    var signature = Array(try! Device.key.signature(for: Device.challenge).derRepresentation)
    switch input.below(5) {
    case 0: signature = Array(try! P256.Signing.ECDSASignature(derRepresentation: signature).rawRepresentation)
    case 1:
        for _ in 0...input.below(3) {
            let at = input.below(signature.count)
            let flip = max(1, input.byte())
            signature[at] ^= flip
        }
    case 2: signature.removeLast(1 + input.below(signature.count))
    case 3:
        let padding = input.chunk(max: 16)
        signature += padding
    default:
        // Re-encoded DER: a long-form length, or a leading zero on r or s (BER, not DER).
        if signature.count > 4, input.bool() { signature = [0x30, 0x81] + Array(signature[1...]) } else if signature.count > 4 {
            signature.insert(0x00, at: 4)
            signature[1] &+= 1
            signature[3] &+= 1
        }
    }
    var challenge = Device.challenge
    if input.bool() {
        let at = input.below(challenge.count)
        let flip = max(1, input.byte())
        challenge[challenge.startIndex + at] ^= flip
    }
    guard let parsed = IdentityService.deviceSignature(Data(signature)) else { return }
    if Device.key.publicKey.isValidSignature(parsed, for: challenge), challenge != Device.challenge {
        finding("a signature verified a challenge that was not signed")
    }
}

enum Device {
    static let key = try! P256.Signing.PrivateKey(rawRepresentation: Data(repeating: 0x11, count: 32))
    static let challenge = Data((0..<32).map { UInt8($0) })
}
