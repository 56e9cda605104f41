import Foundation
import PolicyModel

/// A shared space just created, with the code that lets a partner join it.
public struct NewSpace: Sendable, SecretRedacting {
    /// The space's resource id; its creator is the owner.
    public let resourceId: String
    /// The one-time code a partner enters to join (10 Crockford base32 symbols); stored only as a hash.
    public let shareCode: String
    public var shownFields: KeyValuePairs<String, Any> { ["resourceId": resourceId, "shareCode": Self.redacted] }
}

extension IdentityService {
    /// Crockford base32 without I, L, O, U: 10 symbols carry 50 bits.
    static let shareCodeAlphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    static let shareCodeLength = 10

    func generateShareCode() -> String {
        String(decoding: random.bytes(Self.shareCodeLength).map { Self.shareCodeAlphabet[Int($0) % 32] }, as: UTF8.self)
    }

    /// Upper-cases and strips separators; nil if it cannot be a share code.
    static func normalizeShareCode(_ code: String) -> String? {
        let cleaned = code.uppercased().filter { $0 != "-" && $0 != " " }
        guard cleaned.utf8.count == shareCodeLength, cleaned.utf8.allSatisfy(shareCodeAlphabet.contains) else { return nil }
        return cleaned
    }

    static func validateName(_ name: String, field: String) throws(IdentityError) {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...100).contains(trimmed.count), !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalid(field, "must be 1 to 100 characters without control characters")
        }
        guard !trimmed.unicodeScalars.contains(where: isInvisibleOrDirectional) else {
            throw .invalid(field, "must not contain bidirectional controls or zero-width characters")
        }
    }

    /// Characters that change how a name reads without being seen (Unicode TR 36 and TR 39): the Bidi_Control set
    /// (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069), which can make `gpj.exe` show as `exe.jpg`, and
    /// the zero-width ones (U+200B to U+200D, U+2060, U+FEFF), which make two names that look alike differ.
    static func isInvisibleOrDirectional(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        case 0x200B...0x200D, 0x2060, 0xFEFF: true
        default: scalar.properties.isBidiControl
        }
    }

    /// A resource id a store can hold: 1 to 256 bytes without a NUL (PostgreSQL's text cannot hold one, and a
    /// NUL would be a 503 there and a silent mismatch in SQLite).
    static func validateResourceId(_ id: String, field: String) throws(IdentityError) {
        guard (1...256).contains(id.utf8.count), !id.utf8.contains(0) else {
            throw .invalid(field, "must be 1 to 256 bytes without a NUL character")
        }
    }

    func insertShareCode(_ tx: any IdentityTransaction, resourceId: String, role: String, by userId: String, at t: Date) async throws -> String {
        let code = generateShareCode()
        try await tx.insert(ShareCodeRow(codeHash: SecretCoding.sha256(code), resourceId: resourceId, role: role, createdBy: userId, createdAt: t, expiresAt: t.addingTimeInterval(configuration.shareCodeLifetime), usedAt: nil))
        return code
    }

    /// Whether `role` can be given by a share code: a policy role name other than `owner`.
    static func validateInviteRole(_ role: String, field: String) throws(IdentityError) {
        guard role != "owner", (1...32).contains(role.utf8.count), role.utf8.allSatisfy({ (0x61...0x7A).contains($0) || $0 == 0x5F }) else {
            throw .invalid(field, "must be a role of the policy set other than owner (lowercase letters and '_')")
        }
    }

    /// Creates a shared space owned by the signed-in user, with a share code for one member
    /// joining as `inviteRole` (a role the policy set declares for `type`; no default, since the
    /// right one differs per app: `partner` in ContaCasal, `editor` in the research crawler).
    public func createSpace(accessToken: String, name: String, type: String = "space", inviteRole: String) async throws -> NewSpace {
        try Self.validateName(name, field: "name")
        try Self.validateInviteRole(inviteRole, field: "inviteRole")
        guard (1...32).contains(type.utf8.count), type.utf8.allSatisfy({ (0x61...0x7A).contains($0) || $0 == 0x5F }) else {
            throw IdentityError.invalid("type", "must be 1 to 32 lowercase letters or '_'")
        }
        let t = now()
        return try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            let id = self.newId()
            try await tx.insert(ResourceRow(id: id, type: type, name: name, ownerId: s.userId, createdAt: t))
            // The resource's type and owner named as v22's triggers would set them: they check, and need not rewrite the row.
            try await tx.insert(MembershipRow(resourceId: id, userId: s.userId, role: "owner", joinedAt: t, resourceType: type, resourceOwnerId: s.userId))
            let code = try await self.insertShareCode(tx, resourceId: id, role: inviteRole, by: s.userId, at: t)
            try await self.audit(tx, .spaceCreated, outcome: .success, user: try await self.user(tx, s.userId), at: t)
            return NewSpace(resourceId: id, shareCode: code)
        }
    }

    /// A new single-use share code for a space the signed-in user owns.
    public func newShareCode(accessToken: String, resourceId: String, role: String = "editor") async throws -> String {
        try Self.validateResourceId(resourceId, field: "resourceId")
        try Self.validateInviteRole(role, field: "role")
        let t = now()
        return try await store.write { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            guard let r = try await tx.fetchOne(ResourceRow.self, "id", .text(resourceId)) else { throw IdentityError(.notFound, field: "resourceId", "no such resource") }
            guard r.ownerId == s.userId else { throw IdentityError(.forbidden, field: "resourceId", "only the owner can invite") }
            return try await self.insertShareCode(tx, resourceId: resourceId, role: role, by: s.userId, at: t)
        }
    }

    /// Joins the space a share code belongs to; the code is spent. Wrong codes count against a
    /// per-user guess limit (`shareCodeGuessLimit` per `shareCodeGuessWindow`) and a per-source one
    /// (`AbuseLimits.sourceShareCodeGuesses`), since anonymous accounts cost nothing to make.
    public func joinSpace(accessToken: String, shareCode: String, source: ClientSource) async throws -> String {
        guard let code = Self.normalizeShareCode(shareCode) else { throw IdentityError.invalid("shareCode", "must be 10 characters of the share-code alphabet") }
        let t = now()
        let userLimit = configuration.shareCodeGuessLimit, userWindow = configuration.shareCodeGuessWindow
        let perSource = GuessWindow(
            scope: "share-code-source:" + source.digest, limit: configuration.abuse.sourceShareCodeGuesses, window: configuration.abuse.sourceShareCodeWindow)
        return try await commit { tx in
            let s = try await self.liveSession(tx, accessToken, at: t)
            let user = try await self.user(tx, s.userId)
            let perUser = GuessWindow(scope: "share-code:" + s.userId, limit: userLimit, window: userWindow)
            var limited = try await self.retryAfter(tx, perUser, at: t)
            if limited == nil { limited = try await self.retryAfter(tx, perSource, at: t) }
            if let wait = limited {
                try await self.auditRefusal(tx, .shareCodeRejected, method: nil, reason: "rate_limited", user: user, scope: perSource.scope, at: t)
                return .failure(IdentityError(.throttled, field: "shareCode", "too many wrong share codes", retryAfter: wait))
            }
            guard var row = try await tx.fetchOne(ShareCodeRow.self, "codeHash", .blob(SecretCoding.sha256(code))), row.usedAt == nil, row.expiresAt > t else {
                try await self.countGuess(tx, perUser, at: t)
                try await self.countGuess(tx, perSource, at: t)
                try await self.audit(tx, .shareCodeRejected, outcome: .failure, reason: "unknown_used_or_expired", user: user, at: t)
                return .failure(IdentityError(.invalidCredentials, field: "shareCode", "unknown, used or expired share code"))
            }
            if try await tx.fetchOne(MembershipRow.self, ["resourceId": .text(row.resourceId), "userId": .text(s.userId)]) != nil {
                return .failure(IdentityError(.conflict, field: "shareCode", "already a member of this space"))
            }
            row.usedAt = t
            try await tx.update(row)
            try await tx.insert(MembershipRow(resourceId: row.resourceId, userId: s.userId, role: row.role, joinedAt: t))
            try await self.audit(tx, .spaceJoined, outcome: .success, reason: row.role, user: user, at: t)
            return .success(row.resourceId)
        }
    }
}
