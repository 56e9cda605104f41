import Foundation
import PolicyCompiler
import PolicyModel

/// A small YAML tree the renderer builds before choosing how to write each node.
indirect enum YAMLTree {
    /// A string: written plain only where it reads back as the same string.
    case scalar(String)
    /// A bool or integer: always written plain.
    case plain(String)
    case sequence([YAMLTree])
    case mapping([(String, YAMLTree)])
}

/// Writes a `PolicySetModel` as valid policy YAML in varied shapes, driven by a seeded generator:
/// block and flow collections, plain, quoted and block scalars, one file or many.
struct PolicySetRenderer {
    enum Layout: CaseIterable {
        /// Every section in one file.
        case single
        /// A file per section, a file per resource type, rules split over several files in order.
        case split
    }

    var rng: Rng

    // MARK: Files

    /// The set's files under `folder`. Tiers stay in one file and rules keep their order across files
    /// (files are read in sorted order), so the rendered set means exactly the model.
    mutating func files(_ model: PolicySetModel, layout: Layout, folder: String = "gen") -> [PolicyFileInput] {
        var files: [(String, [(String, YAMLTree)])] = []
        let sections = self.sections(model)
        switch layout {
        case .single:
            files.append(("policy.yaml", sections.map { ($0.0, $0.1) }))
        case .split:
            for (name, tree) in sections {
                switch (name, tree) {
                case ("resources", .mapping(let types)) where types.count > 1:
                    for (index, type) in types.enumerated() { files.append(("types/\(index)-\(type.0).yaml", [("resources", .mapping([type]))])) }
                case ("rules", .sequence(let rules)) where rules.count > 1:
                    let cut = rng.below(rules.count)
                    files.append(("rules-0.yaml", [("rules", .sequence(Array(rules[..<cut])))]))
                    files.append(("rules-1.yaml", [("rules", .sequence(Array(rules[cut...])))]))
                default:
                    files.append(("\(name).yaml", [(name, tree)]))
                }
            }
        }
        return files.map { path, sections in
            PolicyFileInput(path: "\(folder)/\(path)", bytes: Array(document(sections).utf8))
        }
    }

    /// The sections of the set in the order they are written.
    func sections(_ model: PolicySetModel) -> [(String, YAMLTree)] {
        var sections: [(String, YAMLTree)] = []
        if !model.tiers.isEmpty {
            sections.append(("tiers", .mapping(model.tiers.map { tier in
                var fields: [(String, YAMLTree)] = []
                if let name = tier.name { fields.append(("name", .scalar(name))) }
                if let price = tier.price { fields.append(("price", .scalar(price))) }
                if tier.isDefault { fields.append(("default", .plain("true"))) }
                return (tier.id, .mapping(fields))
            })))
        }
        if !model.features.isEmpty {
            sections.append(("features", .mapping(model.features.map { feature in
                var fields: [(String, YAMLTree)] = []
                if let name = feature.name { fields.append(("name", .scalar(name))) }
                fields.append(("tiers", names(feature.tiers)))
                if let upgrade = feature.upgradeTo { fields.append(("upgradeTo", .scalar(upgrade))) }
                return (feature.id, .mapping(fields))
            })))
        }
        if !model.limits.isEmpty {
            sections.append(("limits", .mapping(model.limits.map { limit in
                var fields: [(String, YAMLTree)] = []
                if let name = limit.name { fields.append(("name", .scalar(name))) }
                if let counter = limit.counter { fields.append(("counter", .scalar(counter))) }
                fields.append(("tiers", .mapping(limit.caps.map { ($0.tier, .plain(String($0.cap))) })))
                if let upgrade = limit.upgradeTo { fields.append(("upgradeTo", .scalar(upgrade))) }
                return (limit.id, .mapping(fields))
            })))
        }
        if !model.appRoles.isEmpty {
            if model.appRoles.allSatisfy({ $0.name == nil }) {
                sections.append(("appRoles", .sequence(model.appRoles.map { .scalar($0.id) })))
            } else {
                sections.append(("appRoles", .mapping(model.appRoles.map { role in
                    (role.id, .mapping(role.name.map { [("name", .scalar($0))] } ?? []))
                })))
            }
        }
        if !model.attributes.isEmpty {
            var scopes: [(String, YAMLTree)] = []
            for scope in ["subject", "resource", "context"] {
                let declared = model.attributes.filter { $0.scope == scope }
                guard !declared.isEmpty else { continue }
                scopes.append((scope, .mapping(declared.map { attribute in
                    if case .enumeration(let values) = attribute.type { return (attribute.name, .mapping([("enum", names(values))])) }
                    return (attribute.name, .scalar(attribute.type.description))
                })))
            }
            sections.append(("attributes", .mapping(scopes)))
        }
        sections.append(("resources", .mapping(model.resources.map(resourceType))))
        if !model.rules.isEmpty {
            sections.append(("rules", .sequence(model.rules.map { rule in
                var fields: [(String, YAMLTree)] = []
                if let name = rule.name { fields.append(("name", .scalar(name))) }
                fields.append(("effect", .scalar(rule.effect.rawValue)))
                if let resources = rule.resources { fields.append(("resources", names(resources))) }
                fields.append(("actions", rule.actions.map(names) ?? .scalar("*")))
                if let when = rule.when { fields.append(("when", .scalar(when))) }
                if let message = rule.message { fields.append(("message", .scalar(message))) }
                return .mapping(fields)
            })))
        }
        if !model.messages.isEmpty { sections.append(("messages", messages(model.messages))) }
        return sections
    }

    private func resourceType(_ type: PolicySetModel.ResourceType) -> (String, YAMLTree) {
        var fields: [(String, YAMLTree)] = []
        if let owner = type.owner { fields.append(("owner", .scalar(owner))) }
        if let ownerRole = type.ownerRole { fields.append(("ownerRole", .scalar(ownerRole))) }
        if !type.memberActions.isEmpty { fields.append(("memberActions", names(type.memberActions))) }
        if !type.roles.isEmpty {
            fields.append(("roles", .mapping(type.roles.map { role in
                var body: [(String, YAMLTree)] = []
                if !role.inherits.isEmpty { body.append(("inherits", names(role.inherits))) }
                if !role.grants.isEmpty { body.append(("grants", names(role.grants))) }
                return (role.id, .mapping(body))
            })))
        }
        fields.append(("actions", .mapping(type.actions.map { action in
            var needs: [(String, YAMLTree)] = []
            if let signIn = action.signIn { needs.append(("signIn", .plain(signIn ? "true" : "false"))) }
            if let auth = action.auth {
                var body: [(String, YAMLTree)] = []
                if let methods = auth.methods { body.append(("methods", .sequence(methods.map { .scalar($0) }))) }
                if let maxAge = auth.maxAge { body.append(("maxAge", .scalar(maxAge))) }
                needs.append(("auth", .mapping(body)))
            }
            if let roles = action.appRoles { needs.append(("appRoles", .sequence(roles.map { .scalar($0) }))) }
            if let feature = action.feature { needs.append(("feature", .scalar(feature))) }
            if let limit = action.limit { needs.append(("limit", .scalar(limit))) }
            if let consent = action.consent {
                var body: [(String, YAMLTree)] = []
                if let name = consent.name { body.append(("name", .scalar(name))) }
                body.append(("when", consent.when.map { .scalar($0) } ?? .plain("false")))
                needs.append(("consent", .mapping(body)))
            }
            if !action.messages.isEmpty { needs.append(("messages", messages(action.messages))) }
            return (action.id, .mapping(needs))
        })))
        if !type.messages.isEmpty { fields.append(("messages", messages(type.messages))) }
        return (type.id, .mapping(fields))
    }

    private func messages(_ messages: [PolicySetModel.Message]) -> YAMLTree {
        .mapping(messages.map { ($0.reason.rawValue, .scalar($0.text)) })
    }

    /// A list of names; the language also takes a single name for a list of one.
    private func names(_ names: [String]) -> YAMLTree { .sequence(names.map { .scalar($0) }) }

    // MARK: Writing YAML

    mutating func document(_ sections: [(String, YAMLTree)]) -> String {
        var lines: [String] = []
        if rng.chance(30) { lines.append("# generated policy, seed-driven") }
        for (key, value) in sections {
            if rng.chance(30) { lines.append("") }
            lines += entry(key, value, indent: 0)
        }
        return lines.joined(separator: "\n") + (rng.chance(80) ? "\n" : "")
    }

    /// `key: value` at `indent`, the value written in block or flow style.
    private mutating func entry(_ key: String, _ value: YAMLTree, indent: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        let head = pad + self.key(key) + ":"
        switch value {
        case .plain(let text):
            return [head + " " + text]
        case .scalar(let text):
            let (inline, block) = scalar(text, blockIndent: indent + 2, isName: key != "when")
            return [head + " " + inline] + block
        case .sequence(let items):
            if items.isEmpty { return [head + " []"] }
            if isFlowable(value), rng.chance(items.count <= 4 ? 60 : 20) { return [head + " " + flow(value)] }
            var lines = [head]
            for item in items { lines += sequenceItem(item, indent: indent + 2) }
            return lines
        case .mapping(let entries):
            if entries.isEmpty { return [head + (rng.chance(50) ? " {}" : "")] }
            if isFlowable(value), rng.chance(entries.count <= 3 ? 50 : 15) { return [head + " " + flow(value)] }
            var lines = [head]
            for (k, v) in entries { lines += entry(k, v, indent: indent + 2) }
            return lines
        }
    }

    private mutating func sequenceItem(_ item: YAMLTree, indent: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        switch item {
        case .plain(let text):
            return [pad + "- " + text]
        case .scalar(let text):
            let (inline, block) = scalar(text, blockIndent: indent + 2, isName: true)
            return [pad + "- " + inline] + block
        case .mapping(let entries) where !entries.isEmpty && !(isFlowable(item) && rng.chance(20)):
            var lines: [String] = []
            for (k, v) in entries { lines += entry(k, v, indent: indent + 2) }
            lines[0] = pad + "- " + lines[0].dropFirst(indent + 2)
            return lines
        default:
            return [pad + "- " + flow(item)]
        }
    }

    private func key(_ key: String) -> String { isPlainSafe(key, inFlow: true) ? key : doubleQuoted(key) }

    /// A scalar in block context: its inline text and, for block scalars, the lines that follow.
    private mutating func scalar(_ text: String, blockIndent: Int, isName: Bool) -> (String, [String]) {
        let multiline = text.contains("\n")
        let canBlock = !isName && !text.hasPrefix(" ") && !text.isEmpty
            && !text.split(separator: "\n", omittingEmptySubsequences: false).contains { $0.isEmpty || $0.hasPrefix(" ") || $0.hasSuffix(" ") }
        if canBlock, multiline || rng.chance(20) {
            let pad = String(repeating: " ", count: blockIndent)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { pad + $0 }
            return (rng.chance(50) ? "|-" : ">-", lines)
        }
        if multiline { return (doubleQuoted(text), []) }
        switch rng.below(4) {
        case 0 where isPlainSafe(text, inFlow: false) && (!isName || reads(asString: text)), 1 where isPlainSafe(text, inFlow: false) && (!isName || reads(asString: text)):
            return (text, [])
        case 2: return (singleQuoted(text), [])
        default: return (doubleQuoted(text), [])
        }
    }

    private mutating func flow(_ tree: YAMLTree) -> String {
        switch tree {
        case .plain(let text):
            return text
        case .scalar(let text):
            if isPlainSafe(text, inFlow: true), reads(asString: text), rng.chance(70) {
                return text
            }
            return rng.chance(50) ? singleQuoted(text) : doubleQuoted(text)
        case .sequence(let items):
            return "[" + items.map { flow($0) }.joined(separator: ", ") + "]"
        case .mapping(let entries):
            return "{" + entries.map { key($0.0) + ": " + flow($0.1) }.joined(separator: ", ") + "}"
        }
    }

    private func isFlowable(_ tree: YAMLTree) -> Bool {
        switch tree {
        case .plain: return true
        case .scalar(let text): return !text.contains("\n")
        case .sequence(let items): return items.allSatisfy(isFlowable)
        case .mapping(let entries): return entries.allSatisfy { isFlowable($0.1) }
        }
    }

    /// Whether `text` can be written unquoted and still be read back as exactly `text`.
    private func isPlainSafe(_ text: String, inFlow: Bool) -> Bool {
        guard let first = text.first, !text.contains("\n"), text.first != " ", text.last != " " else { return false }
        if "-?:,[]{}#&*!|>'\"%@`".contains(first) { return false }
        if text.contains(": ") || text.contains(" #") || text.hasSuffix(":") || text.contains("\t") { return false }
        if inFlow, text.contains(where: { ",[]{}".contains($0) }) { return false }
        return true
    }

    /// Whether a plain scalar with this text is a string, not a null, bool or number.
    private func reads(asString text: String) -> Bool {
        if ["", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE"].contains(text) { return false }
        if Int(text) != nil || Double(text) != nil { return false }
        if let first = text.first, first.isNumber || first == "." || first == "+" || first == "-" { return false }
        return true
    }

    private func singleQuoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    private func doubleQuoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
