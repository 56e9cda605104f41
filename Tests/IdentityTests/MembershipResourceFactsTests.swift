import Foundation
import GRDB
import PostgresNIO
import Testing

@testable import Identity
@testable import IdentityPostgres

/// v22 (issue 41): a membership row carries its resource's type and owner for the lists, and the copies are exact on
/// both stores: filled for the rows a v21 database holds, set on every membership written (whatever the write says),
/// rewritten when a resource's type or owner changes, and gone with the resource.
@Suite(.storeScope) struct MembershipResourceFactsTests {
    /// Each membership of `resourceId`: user id to its copies (`[type, owner]`) and its role.
    static func copies(_ h: Harness, of resourceId: String) async throws -> [String: [String?]] {
        try await h.service.store.read { tx in try await tx.fetchAll(MembershipRow.self, "resourceId", .text(resourceId)) }
            .reduce(into: [:]) { $0[$1.userId] = [$1.resourceType, $1.resourceOwnerId, $1.role] }
    }

    @Test(arguments: StoreKind.testable) func aMembershipCarriesItsResourcesTypeAndOwnerThroughEveryWrite(store: StoreKind) async throws {
        let h = try await Harness(store)
        let a = try await h.service.signInAnonymously(source: .inProcess)
        let b = try await h.service.signInAnonymously(source: .inProcess)
        let c = try await h.service.signInAnonymously(source: .inProcess)
        let space = try await h.service.createSpace(accessToken: a.accessToken, name: "S", type: "project", inviteRole: "editor")
        _ = try await h.service.joinSpace(accessToken: b.accessToken, shareCode: space.shareCode, source: .inProcess)
        #expect(try await Self.copies(h, of: space.resourceId) == [a.userId: ["project", a.userId, "owner"], b.userId: ["project", a.userId, "editor"]])

        // The resource's owner and type change (an account deletion hands a space over this way): its memberships follow.
        try await h.service.store.write { tx in
            var resource = try #require(try await tx.fetchAll(ResourceRow.self, "id", .text(space.resourceId)).first)
            resource.ownerId = b.userId
            resource.type = "folder"
            try await tx.update(resource)
        }
        #expect(try await Self.copies(h, of: space.resourceId) == [a.userId: ["folder", b.userId, "owner"], b.userId: ["folder", b.userId, "editor"]])

        // Writes that name other copies (a stale row written back, a new row that says anything) keep the resource's.
        try await h.service.store.write { tx in
            var stale = try #require(try await tx.fetchAll(MembershipRow.self, ["resourceId": .text(space.resourceId), "userId": .text(a.userId)]).first)
            stale.role = "viewer"
            stale.resourceType = "project"
            stale.resourceOwnerId = a.userId
            try await tx.update(stale)
            try await tx.insert(
                MembershipRow(resourceId: space.resourceId, userId: c.userId, role: "commenter", joinedAt: Date(), resourceType: "space", resourceOwnerId: c.userId))
        }
        #expect(
            try await Self.copies(h, of: space.resourceId) == [
                a.userId: ["folder", b.userId, "viewer"], b.userId: ["folder", b.userId, "editor"], c.userId: ["folder", b.userId, "commenter"],
            ])

        // A resource's delete takes its memberships, copies and all; another resource's are untouched.
        let other = try await h.service.createSpace(accessToken: c.accessToken, name: "T", type: "project", inviteRole: "editor")
        try await h.service.store.write { tx in try await tx.deleteAll(ResourceRow.self, ["id": .text(space.resourceId)]) }
        #expect(try await Self.copies(h, of: space.resourceId).isEmpty)
        #expect(try await Self.copies(h, of: other.resourceId) == [c.userId: ["project", c.userId, "owner"]])
    }

    /// A database migrated to v21 with memberships in it (v22 undone on a current one: its index, triggers and columns
    /// dropped, its name taken off the applied list) gets every copy filled when v22 is applied.
    @Test(arguments: StoreKind.testable) func v22FillsTheCopiesOfTheMembershipsAlreadyStored(store: StoreKind) async throws {
        let h = try await Harness(store)
        let a = try await h.service.signInAnonymously(source: .inProcess)
        let b = try await h.service.signInAnonymously(source: .inProcess)
        let first = try await h.service.createSpace(accessToken: a.accessToken, name: "S", type: "project", inviteRole: "editor")
        let second = try await h.service.createSpace(accessToken: b.accessToken, name: "T", type: "space", inviteRole: "viewer")
        _ = try await h.service.joinSpace(accessToken: b.accessToken, shareCode: first.shareCode, source: .inProcess)
        _ = try await h.service.joinSpace(accessToken: a.accessToken, shareCode: second.shareCode, source: .inProcess)
        let v22 = "v22-membership-resource-facts"
        switch store {
        case .sqlite:
            let path = h.dir.appendingPathComponent("identity.sqlite").path
            try await h.database.pool.write { db in
                try db.execute(
                    sql: """
                        DROP INDEX membership_userId_resourceType;
                        DROP TRIGGER membership_resourceFacts_insert;
                        DROP TRIGGER membership_resourceFacts_update;
                        DROP TRIGGER resource_membershipFacts_update;
                        ALTER TABLE membership DROP COLUMN resourceType;
                        ALTER TABLE membership DROP COLUMN resourceOwnerId;
                        DELETE FROM grdb_migrations WHERE identifier = '\(v22)';
                        """)
            }
            _ = try AppDatabase(path: path)
        case .postgres:
            let pg = try #require(h.postgres)
            for sql in [
                #"DROP INDEX "membership_userId_resourceType""#, #"DROP TRIGGER "membership_resourceFacts" ON "membership""#,
                #"DROP TRIGGER "resource_membershipFacts" ON "resource""#, #"DROP FUNCTION "membership_resourceFacts"()"#,
                #"DROP FUNCTION "resource_membershipFacts"()"#, #"ALTER TABLE "membership" DROP COLUMN "resourceType", DROP COLUMN "resourceOwnerId""#,
                #"DELETE FROM "gatehouseMigration" WHERE "identifier" = '\#(v22)'"#,
            ] {
                try await pg.client.query(PostgresQuery(unsafeSQL: sql), logger: TestPostgres.quietLogger)
            }
            try await pg.migrate()
            #expect(try await pg.appliedMigrations() == Schema.migrations.map(\.0))
        }
        #expect(try await Self.copies(h, of: first.resourceId) == [a.userId: ["project", a.userId, "owner"], b.userId: ["project", a.userId, "editor"]])
        #expect(try await Self.copies(h, of: second.resourceId) == [b.userId: ["space", b.userId, "owner"], a.userId: ["space", b.userId, "viewer"]])
        // The triggers are back: a membership written now is filled too.
        try await h.service.store.write { tx in
            var resource = try #require(try await tx.fetchAll(ResourceRow.self, "id", .text(second.resourceId)).first)
            resource.ownerId = a.userId
            try await tx.update(resource)
        }
        #expect(try await Self.copies(h, of: second.resourceId) == [b.userId: ["space", a.userId, "owner"], a.userId: ["space", a.userId, "viewer"]])
    }
}
