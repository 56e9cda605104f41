/// How a vocabulary spells its Swift case names on the wire: `didFailToRenew` is `did_fail_to_renew` in snake
/// case, `DID_FAIL_TO_RENEW` in screaming snake case, `did-fail-to-renew` in kebab case (serde's `rename_all`,
/// Codable's `convertToSnakeCase`).
///
/// Words break before a capital that follows a small letter or a digit, and before the last capital of a run that
/// a small letter follows: `appleJWKS` is `apple_jwks`, `ipv6Prefix` is `ipv6_prefix`, `notES256` is `not_es256`.
package enum CaseSpelling: Sendable {
    /// `did_fail_to_renew`.
    case snake
    /// `DID_FAIL_TO_RENEW`.
    case screamingSnake
    /// `did-fail-to-renew`.
    case kebab

    /// `name` (a Swift case name, ASCII) in this spelling.
    package func spell(_ name: String) -> String {
        let bytes = Array(name.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 4)
        func isUpper(_ i: Int) -> Bool { i < bytes.count && (0x41...0x5A).contains(bytes[i]) }
        func isLower(_ i: Int) -> Bool { i < bytes.count && (0x61...0x7A).contains(bytes[i]) }
        func isDigit(_ i: Int) -> Bool { (0x30...0x39).contains(bytes[i]) }
        for (i, byte) in bytes.enumerated() {
            if i > 0, isUpper(i), isLower(i - 1) || isDigit(i - 1) || (isUpper(i - 1) && isLower(i + 1)) {
                out.append(self == .kebab ? 0x2D : 0x5F)
            }
            switch self {
            case .snake, .kebab: out.append(isUpper(i) ? byte + 0x20 : byte)
            case .screamingSnake: out.append((0x61...0x7A).contains(byte) ? byte - 0x20 : byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A server-side vocabulary whose wire names are its case names in one `CaseSpelling`, so each name is written once:
/// `rawValue` is spelled from the case name, and `init(rawValue:)` finds the case that spells it.
///
/// Not `RawRepresentable`: the standard library's `==` and `hash(into:)` for raw-representable types would compare
/// and hash the spelled names; the cases keep their synthesized equality.
///
/// The names are stored (audit kinds) and sent (problem codes, metric names), so each vocabulary has a test that pins
/// every spelled name: renaming a case fails it. Only for targets that do not ship to apps: the case name is read by
/// reflection, which an app build may strip (`SWIFT_REFLECTION_METADATA_LEVEL`); the decision contract's enums
/// (`Reason`, `Effect`, `DiagnosticCode`) keep their literal raw values.
package protocol SpelledCases: CaseIterable, Hashable {
    /// How the cases are spelled.
    static var spelling: CaseSpelling { get }
}

extension SpelledCases {
    /// The case name in `spelling`.
    public var rawValue: String { Self.spelling.spell(String(describing: self)) }

    /// The case whose spelled name is `rawValue`.
    public init?(rawValue: String) {
        guard let match = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = match
    }
}
