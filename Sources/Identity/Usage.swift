import Foundation
import PolicyModel

extension IdentityService {
    /// A counter moved by `delta`, refused when it would go below 0 or overflow.
    static func counter(_ value: Int, plus delta: Int) throws(IdentityError) -> Int {
        let (sum, overflow) = value.addingReportingOverflow(delta)
        guard !overflow, sum >= 0 else { throw .invalid("delta", "would take the counter below 0 or overflow") }
        return sum
    }

    static func validateCounterName(_ name: String) throws(IdentityError) {
        guard (1...64).contains(name.utf8.count), name.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x5F }) else {
            throw .invalid("counter", "must be 1 to 64 letters, digits or '_'")
        }
    }

    /// Adds `delta` to a resource's usage counter atomically and returns the new value (never below 0).
    @discardableResult
    public func incrementUsage(resourceId: String, counter: String, by delta: Int = 1) async throws -> Int {
        try Self.validateResourceId(resourceId, field: "resourceId")
        try Self.validateCounterName(counter)
        return try await store.write { tx in
            guard try await tx.fetchOne(ResourceRow.self, "id", .text(resourceId)) != nil else { throw IdentityError(.notFound, field: "resourceId", "no such resource") }
            var row = try await tx.fetchOne(UsageCounterRow.self, ["resourceId": .text(resourceId), "name": .text(counter)]) ?? UsageCounterRow(resourceId: resourceId, name: counter, value: 0)
            let sum = try Self.counter(row.value, plus: delta)
            row.value = sum
            try await tx.upsert(row)
            return sum
        }
    }

    /// Adds `delta` to one of a user's own usage counters (those app-wide limits consume, e.g.
    /// `sources`) atomically and returns the new value (never below 0). A server-side call: apps must
    /// not reach it, or they could lower their own usage.
    @discardableResult
    public func incrementUserUsage(userId: String, counter: String, by delta: Int = 1) async throws -> Int {
        try Self.validateCounterName(counter)
        return try await store.write { tx in
            _ = try await self.user(tx, userId)
            var row = try await tx.fetchOne(UserUsageCounterRow.self, ["userId": .text(userId), "name": .text(counter)]) ?? UserUsageCounterRow(userId: userId, name: counter, value: 0)
            let sum = try Self.counter(row.value, plus: delta)
            row.value = sum
            try await tx.upsert(row)
            return sum
        }
    }

    /// A user's own usage counters, by name.
    public func userUsage(userId: String) async throws -> [String: Int] {
        try await store.readOne { tx in try await self.userUsage(tx, userId) }
    }

    func userUsage(_ tx: any IdentityTransaction, _ userId: String) async throws -> [String: Int] {
        var usage: [String: Int] = [:]
        for u in try await tx.fetchAll(UserUsageCounterRow.self, "userId", .text(userId)) { usage[u.name] = u.value }
        return usage
    }
}
