import FuzzSupport
import Identity

/// libFuzzer entry for what a sign-in says about its device (`SessionDevice`, issue 43): the `Gatehouse-Device`
/// header's check and the User-Agent's reduction, both outside bytes that end up on the operator's console. The first
/// byte picks a mode: the rest is the declared name (0), the User-Agent (1), or both, split at the first NUL (2);
/// mode 3 also verifies the session by a device key afterwards, twice.
/// Besides a trap or hang, a finding is: a name accepted that is not 1 to 64 printable ASCII characters, is not the
/// header trimmed, or starts with the device-key marker; a refusal naming another field or repeating the header's
/// bytes; an agent that is not one `name/major` of letters, digits, `.`, `_` and `-` within 48 bytes; a stored column
/// holding anything but those and the ` · ` separator, or a device key's marker twice.
public func fuzzSessionDevice(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    let mode = input.byte() % 4
    let rest = input.rest()
    var name: String?
    var agent: String?
    switch mode {
    case 0: name = String(decoding: rest, as: UTF8.self)
    case 1: agent = String(decoding: rest, as: UTF8.self)
    default:
        let cut = rest.firstIndex(of: 0) ?? rest.count
        name = String(decoding: rest[..<cut], as: UTF8.self)
        agent = String(decoding: rest[min(cut + 1, rest.count)...], as: UTF8.self)
    }
    let device: SessionDevice
    do {
        device = try SessionDevice(name: name, userAgent: agent)
    } catch {
        if error.field != "Gatehouse-Device" { finding("a refusal names \(error.field)") }
        // The marker refusal quotes the marker itself ('enrolled device '), which a refused name starts with: that quote
        // is the rule, not the header, so it is taken out before looking for the name.
        let message = "\(error)".replacing("'\(SessionDevice.keyPrefix)'", with: "")
        if let name, name.utf8.count >= 6, occurrences(of: name, in: message) > 0 { finding("a refusal repeats the header") }
        return
    }
    if let accepted = device.name {
        let bytes = Array(accepted.utf8)
        if !(1...SessionDevice.maxNameLength).contains(bytes.count) || !bytes.allSatisfy({ (0x20...0x7E).contains($0) }) {
            finding("accepted the name \(bytes)")
        }
        if accepted.first == " " || accepted.last == " " { finding("accepted a name with its spaces") }
        if accepted.lowercased().hasPrefix(SessionDevice.keyPrefix) { finding("accepted a name with the device-key marker") }
    } else if name != nil {
        finding("a declared name neither accepted nor refused")
    }
    if let reduced = device.agent {
        let parts = reduced.split(separator: "/", omittingEmptySubsequences: false)
        let allowed = { (c: UInt8) in (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || c == 0x2E || c == 0x5F || c == 0x2D }
        if reduced.utf8.count > SessionDevice.maxAgentLength || parts.count != 2 || parts.contains(where: { $0.isEmpty || !$0.utf8.allSatisfy(allowed) }) {
            finding("kept the agent \(Array(reduced.utf8))")
        }
    }
    var stored = device.stored
    if mode == 3 {
        stored = SessionDevice.verified(byDeviceKey: "kitchen-ipad", stored)
        stored = SessionDevice.verified(byDeviceKey: "hall-ipad", stored)
        guard let s = stored, s.hasPrefix(SessionDevice.keyPrefix + "hall-ipad") else { finding("the last key is not first: \(stored ?? "nil")") }
        // The key's marker leads, once: what follows it is nothing or ` · ` and the column as the sign-in left it, which
        // never starts with the marker (a declared name may hold the words elsewhere, as "Unenrolled device" does).
        let rest = s.dropFirst((SessionDevice.keyPrefix + "hall-ipad").count)
        if !rest.isEmpty, !rest.hasPrefix(" · ") || rest.dropFirst(" · ".count).hasPrefix(SessionDevice.keyPrefix) {
            finding("the device-key marker twice: \(s)")
        }
    }
    if let s = stored {
        let plain = s.replacingOccurrences(of: " · ", with: "")
        if !plain.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) { finding("stored \(Array(s.utf8))") }
    }
}
