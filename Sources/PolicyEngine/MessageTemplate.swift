import PolicyModel

/// The names a message may fill in with `{name}`.
package enum Placeholder: String, Sendable, CaseIterable {
    case action, resource
    case feature, tier, price
    case limit, limitName, used, remaining
    case role, roles
    case methods, maxAge
    case consent
    case rule

    /// The placeholders a decision with this reason can always fill.
    package static func available(for reason: Reason) -> Set<Placeholder> {
        var set: Set<Placeholder> = [.action, .resource]
        if reason == .deniedByRule { set.insert(.rule) }
        if let kind = Requirement(denyingWith: reason) { set.formUnion(kind.placeholders) }
        return set
    }
}

/// A user-facing message with `{placeholder}`s, split once at compile time.
package struct MessageTemplate: Sendable, Hashable {
    package enum Segment: Sendable, Hashable {
        case text(String)
        case placeholder(Placeholder)
    }

    package let segments: [Segment]
    /// Where the text is written; nil for built-in defaults.
    package let location: SourceLocation?

    package init(segments: [Segment], location: SourceLocation?) {
        self.segments = segments
        self.location = location
    }

    package var placeholders: [Placeholder] {
        segments.compactMap { if case .placeholder(let p) = $0 { p } else { nil } }
    }

    /// Splits `text` at `{name}`; returns the unknown names (with their offsets) instead when there are any.
    package static func parse(_ text: String, location: SourceLocation?) -> Result<MessageTemplate, TemplateError> {
        var segments: [Segment] = []
        var literal = ""
        var i = text.startIndex
        var offset = 0
        while i < text.endIndex {
            let c = text[i]
            if c == "{", let close = text[i...].firstIndex(of: "}") {
                let name = String(text[text.index(after: i)..<close])
                guard let placeholder = Placeholder(rawValue: name) else {
                    return .failure(TemplateError(name: name, offset: offset))
                }
                if !literal.isEmpty { segments.append(.text(literal)); literal = "" }
                segments.append(.placeholder(placeholder))
                offset += name.count + 2
                i = text.index(after: close)
                continue
            }
            literal.append(c)
            offset += 1
            i = text.index(after: i)
        }
        if !literal.isEmpty { segments.append(.text(literal)) }
        return .success(MessageTemplate(segments: segments, location: location))
    }

    package struct TemplateError: Error, Sendable {
        package let name: String
        /// Characters from the start of the text to the opening brace.
        package let offset: Int
    }

    /// Fills the placeholders from the facts of one decision.
    package func render(_ facts: MessageFacts) -> String {
        var out = ""
        for segment in segments {
            switch segment {
            case .text(let s): out += s
            case .placeholder(let p): out += facts.value(for: p) ?? "{\(p.rawValue)}"
            }
        }
        return out
    }
}

/// The values a denied decision offers its message.
package struct MessageFacts {
    package var action: String
    package var resource: String
    package var feature: String?
    package var tier: String?
    package var price: String?
    package var limit: Int?
    package var limitName: String?
    package var used: Int?
    package var remaining: Int?
    package var roles: [String] = []
    package var methods: [String] = []
    package var maxAge: String?
    package var consent: String?
    package var rule: String?

    package init(action: String, resource: String) {
        self.action = action
        self.resource = resource
    }

    func value(for placeholder: Placeholder) -> String? {
        switch placeholder {
        case .action: action
        case .resource: resource
        case .feature: feature
        case .tier: tier
        case .price: price
        case .limit: limit.map(String.init)
        case .limitName: limitName
        case .used: used.map(String.init)
        case .remaining: remaining.map(String.init)
        case .role: roles.first
        case .roles: roles.isEmpty ? nil : roles.joined(separator: " or ")
        case .methods: methods.isEmpty ? nil : methods.joined(separator: " or ")
        case .maxAge: maxAge
        case .consent: consent
        case .rule: rule
        }
    }
}

/// The built-in message for each reason, used where a policy sets none.
package enum DefaultMessages {
    package static func text(for reason: Reason) -> String? {
        switch reason {
        case .allowed: nil
        case .defaultDeny, .deniedByRule: "This action is not allowed."
        default: Requirement(denyingWith: reason)?.defaultMessage(reason)
        }
    }

    package static func template(for reason: Reason) -> MessageTemplate? {
        guard let text = text(for: reason), case .success(let t) = MessageTemplate.parse(text, location: nil) else { return nil }
        return t
    }
}
