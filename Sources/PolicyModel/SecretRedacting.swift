/// A value that carries a secret (a token, a share code): `print`, string interpolation, `dump`, `String(reflecting:)`
/// and a debugger's summary all show `shownFields` only, so the secret cannot reach a log line through them.
///
/// A conformer lists what may be shown and names each secret it holds with `SecretRedacting.redacted` in its place:
/// `SessionTokens(session: s1, user: u1, tokens: <redacted>)`.
public protocol SecretRedacting: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The fields that may be shown, in order, each secret as `redacted`.
    var shownFields: KeyValuePairs<String, Any> { get }
}

extension SecretRedacting {
    /// What stands in for a secret.
    public static var redacted: String { "<redacted>" }

    /// `TypeName(field: value, ...)`, secrets redacted.
    public var description: String {
        "\(Self.self)(" + shownFields.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
    }

    /// The same as `description`.
    public var debugDescription: String { description }

    /// What `dump` and reflection see: `shownFields`, never a secret.
    public var customMirror: Mirror { Mirror(self, children: shownFields, displayStyle: .struct) }
}
