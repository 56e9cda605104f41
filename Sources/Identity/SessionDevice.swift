import Foundation

/// What a sign-in says about the device it came from, kept on the session for the operator console (issue 43) and
/// never trusted for a decision: the name the client declared (the `Gatehouse-Device` header: `GatehouseClient` sends
/// the hardware model identifier, such as `iPhone15,2`) and its User-Agent reduced to one product (`ResearchApp/1.4`,
/// `Chrome/131`). A device-key verification on the session adds the key's device id (`enrolled device ...`).
public struct SessionDevice: Sendable, Hashable {
    /// The longest declared name, in characters.
    public static let maxNameLength = 64
    /// The longest product string kept from a User-Agent.
    package static let maxAgentLength = 48

    /// What starts the column once a device key verified the session; a declared name may not start with it.
    package static let keyPrefix = "enrolled device "

    /// The name the client declared, checked; nil when it declared none.
    public var name: String?
    /// The User-Agent's product, reduced; nil when there was none worth keeping.
    public var agent: String?

    /// The declared `name` (1 to 64 printable ASCII characters once trimmed, so no control, bidirectional or
    /// zero-width character; anything else is `invalid_input` on `field`) and the `userAgent`, reduced, never refused.
    public init(name: String?, userAgent: String?, field: String = "Gatehouse-Device") throws(IdentityError) {
        if let name {
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            guard (1...Self.maxNameLength).contains(trimmed.utf8.count), trimmed.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
                throw .invalid(field, "must be 1 to \(Self.maxNameLength) printable ASCII characters")
            }
            guard !trimmed.lowercased().hasPrefix(Self.keyPrefix) else {
                throw .invalid(field, "must not start with '\(Self.keyPrefix)', which marks a device key's verification")
            }
            self.name = trimmed
        }
        agent = userAgent.flatMap(Self.product(ofUserAgent:))
    }

    /// The one product of a User-Agent a person recognises, with its major version: the first `name/version` outside a
    /// comment, or for a browser (`Mozilla/5.0 (...) ...`) the browser's own (`Edg`, `OPR`, `Firefox`, `Chrome`,
    /// `Safari` with its `Version/`). Nil when nothing is left of only letters, digits, `.`, `_`, `-` and one `/`.
    package static func product(ofUserAgent userAgent: String) -> String? {
        var products: [Substring] = []
        var depth = 0
        for word in userAgent.prefix(512).split(separator: " ") {
            if depth == 0, !word.hasPrefix("("), word.contains("/") { products.append(word) }
            depth = max(0, depth + word.filter { $0 == "(" }.count - word.filter { $0 == ")" }.count)
        }
        guard var chosen = products.first else { return nil }
        if chosen.hasPrefix("Mozilla/") {
            for browser in ["Edg/", "OPR/", "Firefox/", "Chrome/", "Safari/"] {
                if let found = products.first(where: { $0.hasPrefix(browser) }) {
                    chosen = found
                    break
                }
            }
            // Safari's own version is in `Version/`, its `Safari/` token is WebKit's build.
            if chosen.hasPrefix("Safari/"), let version = products.first(where: { $0.hasPrefix("Version/") }) {
                chosen = Substring("Safari/" + version.dropFirst("Version/".count))
            }
        }
        let parts = chosen.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let major = parts[1].prefix { $0 != "." }
        let reduced = "\(parts[0])/\(major)"
        let allowed = { (c: UInt8) in (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || c == 0x2E || c == 0x5F || c == 0x2D }
        guard reduced.utf8.count <= maxAgentLength, !major.isEmpty, !parts[0].isEmpty,
            parts[0].utf8.allSatisfy(allowed), major.utf8.allSatisfy(allowed)
        else { return nil }
        return reduced
    }

    /// The session's `device` column: the name, then the agent after ` · `; nil when there is neither (shown as unknown).
    package var stored: String? {
        switch (name, agent) {
        case (nil, nil): nil
        case let (name?, nil): name
        case let (nil, agent?): agent
        case let (name?, agent?): "\(name) · \(agent)"
        }
    }

    /// `stored` after a verification by the device key enrolled as `deviceId` (already checked printable ASCII): the
    /// key's device id first, in place of an earlier key's.
    package static func verified(byDeviceKey deviceId: String, _ stored: String?) -> String {
        let prefix = Self.keyPrefix
        var rest = stored
        if let old = stored, old.hasPrefix(prefix) {
            rest = old.range(of: " · ").map { String(old[$0.upperBound...]) }
        }
        let key = prefix + deviceId
        return rest.map { "\(key) · \($0)" } ?? key
    }
}
