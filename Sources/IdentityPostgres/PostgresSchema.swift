import Foundation
import Identity
import PostgresNIO

extension PostgresStore {
    /// Applies the migrations not yet applied, in order, in one transaction that holds an advisory
    /// lock on the schema: replicas starting together wait for each other, and the second finds
    /// nothing left to do. Creates the configured schema if it does not exist. Idempotent.
    ///
    /// A database with every migration applied is only read: a role that may not CREATE (the grants
    /// docs/identity.md lists) starts. A database with a migration this build does not know (a newer
    /// build migrated it) is refused, naming its migration and the newest this build knows.
    public func migrate() async throws {
        let logger = self.logger
        let lockKey = "gatehouse-migrations:" + (configuration.schema ?? "")
        let schema = configuration.schema
        do {
            if let applied = try await appliedIdentifiers() {
                try Schema.refuseNewer(applied: applied)
                if Set(PostgresSchema.names).isSubset(of: applied) { return }
            }
            try await withConnection { connection in
                try await connection.query("BEGIN", logger: logger)
                do {
                    // Migrating waits for the replica that migrates first (the advisory lock) and takes the DDL's
                    // locks: it is bounded by the server's start deadline (30 s), not by the requests' deadlines.
                    try await connection.query("SET LOCAL lock_timeout = 0", logger: logger)
                    try await connection.query("SET LOCAL statement_timeout = 0", logger: logger)
                    try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(lockKey)))", logger: logger)
                    if let schema {
                        try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(quoted(schema))"), logger: logger)
                    }
                    try await connection.query(
                        #"CREATE TABLE IF NOT EXISTS "gatehouseMigration" ("identifier" TEXT PRIMARY KEY, "appliedAt" TIMESTAMPTZ NOT NULL DEFAULT now())"#,
                        logger: logger)
                    var applied = Set<String>()
                    for try await name in try await connection.query(#"SELECT "identifier" FROM "gatehouseMigration""#, logger: logger)
                        .decode(String.self)
                    {
                        applied.insert(name)
                    }
                    try Schema.refuseNewer(applied: applied)
                    for (name, statements) in PostgresSchema.migrations where !applied.contains(name) {
                        for sql in statements { try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger) }
                        try await connection.query(#"INSERT INTO "gatehouseMigration" ("identifier") VALUES (\#(name))"#, logger: logger)
                    }
                    try await connection.query("COMMIT", logger: logger)
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        } catch {
            throw Self.mapped(error)
        }
    }

    /// The migrations applied to the schema the connections see, read without any DDL; nil when there is
    /// no migration table yet.
    func appliedIdentifiers() async throws -> Set<String>? {
        let logger = self.logger
        return try await withConnection { connection -> Set<String>? in
            let exists = try await connection.query(#"SELECT to_regclass('"gatehouseMigration"') IS NOT NULL"#, logger: logger)
                .collect().first?.decode(Bool.self) ?? false
            guard exists else { return nil }
            var names = Set<String>()
            for try await name in try await connection.query(#"SELECT "identifier" FROM "gatehouseMigration""#, logger: logger).decode(String.self) {
                names.insert(name)
            }
            return names
        }
    }

    /// The identifiers of the migrations applied to this store's schema, in the order they are
    /// declared (one `migrate()` applies several in the same instant), unknown ones last.
    public func appliedMigrations() async throws -> [String] {
        let logger = self.logger
        do {
            return try await withConnection { connection in
                var names: [String] = []
                for try await name in try await connection.query(
                    #"SELECT "identifier" FROM "gatehouseMigration" ORDER BY "identifier""#, logger: logger
                ).decode(String.self) {
                    names.append(name)
                }
                let known = PostgresSchema.names
                return known.filter(names.contains) + names.filter { !known.contains($0) }
            }
        } catch {
            throw Self.mapped(error)
        }
    }
}

/// The SQLite schema's named migrations (`Schema.migrations` in Identity) in PostgreSQL's dialect,
/// one statement per string (the extended protocol runs one at a time). Same names, same order,
/// same tables and columns; docs/identity.md lists the differences of dialect.
package enum PostgresSchema {
    /// The migration names, in order; they equal SQLite's.
    package static var names: [String] { migrations.map(\.0) }

    /// The append-only guard of a log table: refuses UPDATE and DELETE except what the SQLite
    /// triggers of the same migration allow. `allowUpdate` and `allowDelete` are SQL conditions.
    static func guardFunction(_ table: String, message: String, allowUpdate: String, allowDelete: String) -> String {
        """
        CREATE OR REPLACE FUNCTION "\(table)_appendOnly"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        BEGIN
            IF TG_OP = 'UPDATE' THEN
                IF (\(allowUpdate)) THEN RETURN NEW; END IF;
            ELSIF TG_OP = 'DELETE' THEN
                IF (\(allowDelete)) THEN RETURN OLD; END IF;
            END IF;
            RAISE EXCEPTION '\(message)' USING ERRCODE = 'insufficient_privilege';
        END $$
        """
    }

    static func guardTriggers(_ table: String) -> [String] {
        [
            #"CREATE TRIGGER "\#(table)_noUpdateOrDelete" BEFORE UPDATE OR DELETE ON "\#(table)" FOR EACH ROW EXECUTE FUNCTION "\#(table)_appendOnly"()"#,
            #"CREATE TRIGGER "\#(table)_noTruncate" BEFORE TRUNCATE ON "\#(table)" FOR EACH STATEMENT EXECUTE FUNCTION "\#(table)_appendOnly"()"#,
        ]
    }

    static let migrations: [(String, [String])] = [
        (
            "v1-accounts",
            [
                // SQLite's NOCASE: usernames compare without case (they are ASCII letters, digits, '.', '_', '-').
                "CREATE COLLATION IF NOT EXISTS nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
                """
                CREATE TABLE "user" (
                    "id" TEXT PRIMARY KEY,
                    "pseudonym" TEXT NOT NULL UNIQUE,
                    "username" TEXT UNIQUE COLLATE nocase,
                    "displayName" TEXT,
                    "email" TEXT,
                    "isPrivateRelayEmail" BOOLEAN NOT NULL DEFAULT false,
                    "createdAt" TIMESTAMPTZ NOT NULL
                )
                """,
                """
                CREATE TABLE "appRole" (
                    "userId" TEXT NOT NULL REFERENCES "user"("id") ON DELETE CASCADE,
                    "role" TEXT NOT NULL CHECK ("role" IN ('customer', 'driver', 'partner', 'admin')),
                    PRIMARY KEY ("userId", "role")
                )
                """,
                """
                CREATE TABLE "appleIdentity" (
                    "subject" TEXT PRIMARY KEY,
                    "userId" TEXT NOT NULL REFERENCES "user"("id") ON DELETE CASCADE,
                    "email" TEXT,
                    "isPrivateRelay" BOOLEAN NOT NULL DEFAULT false,
                    "credentialState" TEXT NOT NULL CHECK ("credentialState" IN ('authorized', 'revoked', 'notFound', 'transferred')),
                    "transferredTo" TEXT,
                    "createdAt" TIMESTAMPTZ NOT NULL,
                    "updatedAt" TIMESTAMPTZ NOT NULL
                )
                """,
                #"CREATE INDEX "appleIdentity_userId" ON "appleIdentity"("userId")"#,
                """
                CREATE TABLE "appleNonce" (
                    "nonceHash" BYTEA PRIMARY KEY,
                    "expiresAt" TIMESTAMPTZ NOT NULL,
                    "usedAt" TIMESTAMPTZ
                )
                """,
                """
                CREATE TABLE "pinCredential" (
                    "userId" TEXT PRIMARY KEY REFERENCES "user"("id") ON DELETE CASCADE,
                    "algorithm" TEXT NOT NULL CHECK ("algorithm" IN ('pbkdf2-sha256', 'legacy-sha256')),
                    "rounds" BIGINT NOT NULL,
                    "salt" BYTEA NOT NULL,
                    "hash" BYTEA NOT NULL,
                    "failedAttempts" BIGINT NOT NULL DEFAULT 0,
                    "nextAttemptAt" TIMESTAMPTZ,
                    "lockedAt" TIMESTAMPTZ,
                    "updatedAt" TIMESTAMPTZ NOT NULL
                )
                """,
                """
                CREATE TABLE "privacySettings" (
                    "userId" TEXT PRIMARY KEY REFERENCES "user"("id") ON DELETE CASCADE,
                    "analytics" BOOLEAN NOT NULL DEFAULT false,
                    "crashReporting" BOOLEAN NOT NULL DEFAULT false,
                    "aiSuggestions" BOOLEAN NOT NULL DEFAULT false,
                    "dataSharing" TEXT NOT NULL DEFAULT 'none' CHECK ("dataSharing" IN ('none', 'minimal', 'standard')),
                    "updatedAt" TIMESTAMPTZ NOT NULL
                )
                """,
                """
                CREATE TABLE "subscription" (
                    "userId" TEXT PRIMARY KEY REFERENCES "user"("id") ON DELETE CASCADE,
                    "tier" TEXT NOT NULL,
                    "productId" TEXT NOT NULL,
                    "expiresAt" TIMESTAMPTZ,
                    "updatedAt" TIMESTAMPTZ NOT NULL
                )
                """,
            ]
        ),
        (
            "v2-sessions-and-devices",
            [
                """
                CREATE TABLE "session" (
                    "id" TEXT PRIMARY KEY,
                    "userId" TEXT NOT NULL REFERENCES "user"("id") ON DELETE CASCADE,
                    "accessTokenHash" BYTEA NOT NULL UNIQUE,
                    "accessExpiresAt" TIMESTAMPTZ NOT NULL,
                    "authMethod" TEXT NOT NULL,
                    "authLevel" BIGINT NOT NULL,
                    "verifiedAt" TIMESTAMPTZ NOT NULL,
                    "createdAt" TIMESTAMPTZ NOT NULL,
                    "lastSeenAt" TIMESTAMPTZ NOT NULL,
                    "expiresAt" TIMESTAMPTZ NOT NULL,
                    "revokedAt" TIMESTAMPTZ,
                    "revokedReason" TEXT
                )
                """,
                #"CREATE INDEX "session_userId" ON "session"("userId")"#,
                """
                CREATE TABLE "refreshToken" (
                    "tokenHash" BYTEA PRIMARY KEY,
                    "sessionId" TEXT NOT NULL REFERENCES "session"("id") ON DELETE CASCADE,
                    "createdAt" TIMESTAMPTZ NOT NULL,
                    "rotatedAt" TIMESTAMPTZ,
                    "successorHash" BYTEA
                )
                """,
                #"CREATE INDEX "refreshToken_sessionId" ON "refreshToken"("sessionId")"#,
                """
                CREATE TABLE "deviceKey" (
                    "id" TEXT PRIMARY KEY,
                    "userId" TEXT NOT NULL REFERENCES "user"("id") ON DELETE CASCADE,
                    "deviceId" TEXT NOT NULL,
                    "publicKey" BYTEA NOT NULL,
                    "failedAttempts" BIGINT NOT NULL DEFAULT 0,
                    "lockedAt" TIMESTAMPTZ,
                    "createdAt" TIMESTAMPTZ NOT NULL,
                    UNIQUE ("userId", "deviceId")
                )
                """,
                """
                CREATE TABLE "deviceChallenge" (
                    "challengeHash" BYTEA PRIMARY KEY,
                    "deviceKeyId" TEXT NOT NULL REFERENCES "deviceKey"("id") ON DELETE CASCADE,
                    "sessionId" TEXT NOT NULL REFERENCES "session"("id") ON DELETE CASCADE,
                    "expiresAt" TIMESTAMPTZ NOT NULL,
                    "usedAt" TIMESTAMPTZ
                )
                """,
                #"CREATE INDEX "deviceChallenge_deviceKeyId" ON "deviceChallenge"("deviceKeyId")"#,
                #"CREATE INDEX "deviceChallenge_sessionId" ON "deviceChallenge"("sessionId")"#,
            ]
        ),
        (
            "v3-spaces-and-usage",
            [
                """
                CREATE TABLE "resource" (
                    "id" TEXT PRIMARY KEY,
                    "type" TEXT NOT NULL,
                    "name" TEXT NOT NULL,
                    "ownerId" TEXT NOT NULL REFERENCES "user"("id") ON DELETE RESTRICT,
                    "createdAt" TIMESTAMPTZ NOT NULL
                )
                """,
                #"CREATE INDEX "resource_ownerId" ON "resource"("ownerId")"#,
                """
                CREATE TABLE "membership" (
                    "resourceId" TEXT NOT NULL REFERENCES "resource"("id") ON DELETE CASCADE,
                    "userId" TEXT NOT NULL REFERENCES "user"("id") ON DELETE CASCADE,
                    "role" TEXT NOT NULL CHECK ("role" ~ '^[a-z_]{1,32}$'),
                    "joinedAt" TIMESTAMPTZ NOT NULL,
                    PRIMARY KEY ("resourceId", "userId")
                )
                """,
                #"CREATE INDEX "membership_userId" ON "membership"("userId")"#,
                """
                CREATE TABLE "shareCode" (
                    "codeHash" BYTEA PRIMARY KEY,
                    "resourceId" TEXT NOT NULL REFERENCES "resource"("id") ON DELETE CASCADE,
                    "role" TEXT NOT NULL CHECK ("role" <> 'owner' AND "role" ~ '^[a-z_]{1,32}$'),
                    "createdBy" TEXT NOT NULL REFERENCES "user"("id") ON DELETE CASCADE,
                    "createdAt" TIMESTAMPTZ NOT NULL,
                    "expiresAt" TIMESTAMPTZ NOT NULL,
                    "usedAt" TIMESTAMPTZ
                )
                """,
                #"CREATE INDEX "shareCode_resourceId" ON "shareCode"("resourceId")"#,
                #"CREATE INDEX "shareCode_createdBy" ON "shareCode"("createdBy")"#,
                """
                CREATE TABLE "guessLimit" (
                    "scope" TEXT PRIMARY KEY,
                    "windowStart" TIMESTAMPTZ NOT NULL,
                    "failures" BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE "usageCounter" (
                    "resourceId" TEXT NOT NULL REFERENCES "resource"("id") ON DELETE CASCADE,
                    "name" TEXT NOT NULL,
                    "value" BIGINT NOT NULL CHECK ("value" >= 0),
                    PRIMARY KEY ("resourceId", "name")
                )
                """,
            ]
        ),
        (
            "v4-audit",
            [
                """
                CREATE TABLE "auditEvent" (
                    "id" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                    "at" TIMESTAMPTZ NOT NULL,
                    "kind" TEXT NOT NULL,
                    "method" TEXT,
                    "outcome" TEXT NOT NULL,
                    "reason" TEXT,
                    "actor" TEXT
                )
                """,
                #"CREATE INDEX "auditEvent_actor" ON "auditEvent"("actor")"#,
                guardFunction("auditEvent", message: "audit log is append-only", allowUpdate: "false", allowDelete: "false"),
            ] + guardTriggers("auditEvent")
        ),
        (
            "v5-decision-log",
            [
                """
                CREATE TABLE "decisionLog" (
                    "id" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                    "at" TIMESTAMPTZ NOT NULL,
                    "actor" TEXT,
                    "action" TEXT NOT NULL,
                    "resourceType" TEXT NOT NULL,
                    "resourceId" TEXT,
                    "effect" TEXT NOT NULL,
                    "reason" TEXT NOT NULL,
                    "policyHash" TEXT NOT NULL,
                    "policyLocation" TEXT
                )
                """,
                guardFunction("decisionLog", message: "decision log is append-only", allowUpdate: "false", allowDelete: "false"),
            ] + guardTriggers("decisionLog")
        ),
        (
            "v6-refresh-key",
            [
                #"ALTER TABLE "session" ADD COLUMN "refreshKey" BYTEA"#,
                // 32 bytes from the server's strong random source (gen_random_uuid), one draw per row.
                #"UPDATE "session" SET "refreshKey" = sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()))"#,
            ]
        ),
        (
            "v7-pin-throttle",
            [
                """
                CREATE TABLE "pinThrottle" (
                    "scope" TEXT PRIMARY KEY,
                    "failures" BIGINT NOT NULL,
                    "lastFailureAt" TIMESTAMPTZ NOT NULL
                )
                """
            ]
        ),
        (
            "v8-user-usage",
            [
                """
                CREATE TABLE "userUsageCounter" (
                    "userId" TEXT NOT NULL REFERENCES "user"("id") ON DELETE CASCADE,
                    "name" TEXT NOT NULL,
                    "value" BIGINT NOT NULL CHECK ("value" >= 0),
                    PRIMARY KEY ("userId", "name")
                )
                """
            ]
        ),
        (
            "v9-apple-state-time",
            [
                #"ALTER TABLE "appleIdentity" ADD COLUMN "stateChangedAt" TIMESTAMPTZ"#,
                #"UPDATE "appleIdentity" SET "stateChangedAt" = "updatedAt""#,
            ]
        ),
        // As in SQLite: expiry by age (rows older than logRetention's cutoff) and the erasure of a
        // deleted user (only `actor`, and a decision's `resourceId`, of rows whose actor is listed in
        // `erasure`) are the only changes the logs accept. TRUNCATE is refused outright.
        (
            "v10-log-retention-and-erasure",
            [
                """
                CREATE TABLE "logRetention" (
                    "id" BIGINT PRIMARY KEY CHECK ("id" = 1),
                    "cutoff" TIMESTAMPTZ NOT NULL
                )
                """,
                #"CREATE TABLE "erasure" ("pseudonym" TEXT PRIMARY KEY)"#,
                guardFunction(
                    "auditEvent", message: "audit log is append-only",
                    allowUpdate: """
                        NEW."id" IS NOT DISTINCT FROM OLD."id" AND NEW."at" IS NOT DISTINCT FROM OLD."at"
                        AND NEW."kind" IS NOT DISTINCT FROM OLD."kind" AND NEW."method" IS NOT DISTINCT FROM OLD."method"
                        AND NEW."outcome" IS NOT DISTINCT FROM OLD."outcome" AND NEW."reason" IS NOT DISTINCT FROM OLD."reason"
                        AND OLD."actor" IN (SELECT "pseudonym" FROM "erasure")
                        """,
                    allowDelete: #"OLD."at" < coalesce((SELECT "cutoff" FROM "logRetention" WHERE "id" = 1), '-infinity')"#),
                guardFunction(
                    "decisionLog", message: "decision log is append-only",
                    allowUpdate: """
                        NEW."id" IS NOT DISTINCT FROM OLD."id" AND NEW."at" IS NOT DISTINCT FROM OLD."at"
                        AND NEW."action" IS NOT DISTINCT FROM OLD."action" AND NEW."resourceType" IS NOT DISTINCT FROM OLD."resourceType"
                        AND NEW."effect" IS NOT DISTINCT FROM OLD."effect" AND NEW."reason" IS NOT DISTINCT FROM OLD."reason"
                        AND NEW."policyHash" IS NOT DISTINCT FROM OLD."policyHash"
                        AND NEW."policyLocation" IS NOT DISTINCT FROM OLD."policyLocation"
                        AND (NEW."resourceId" IS NOT DISTINCT FROM OLD."resourceId" OR NEW."resourceId" IS NULL)
                        AND OLD."actor" IN (SELECT "pseudonym" FROM "erasure")
                        """,
                    allowDelete: #"OLD."at" < coalesce((SELECT "cutoff" FROM "logRetention" WHERE "id" = 1), '-infinity')"#),
                #"CREATE INDEX "auditEvent_at" ON "auditEvent"("at")"#,
                #"CREATE INDEX "decisionLog_at" ON "decisionLog"("at")"#,
                #"CREATE INDEX "decisionLog_actor" ON "decisionLog"("actor")"#,
            ]
        ),
        (
            "v11-app-store",
            [
                """
                CREATE TABLE "appStoreTransaction" (
                    "originalTransactionId" TEXT PRIMARY KEY,
                    "userId" TEXT NOT NULL REFERENCES "user"("id") ON DELETE CASCADE,
                    "transactionId" TEXT NOT NULL,
                    "productId" TEXT NOT NULL,
                    "environment" TEXT NOT NULL CHECK ("environment" IN ('Production', 'Sandbox', 'Xcode')),
                    "expiresAt" TIMESTAMPTZ,
                    "revokedAt" TIMESTAMPTZ,
                    "signedAt" TIMESTAMPTZ NOT NULL,
                    "updatedAt" TIMESTAMPTZ NOT NULL
                )
                """,
                #"CREATE INDEX "appStoreTransaction_userId" ON "appStoreTransaction"("userId")"#,
                """
                CREATE TABLE "appAccountToken" (
                    "userId" TEXT PRIMARY KEY REFERENCES "user"("id") ON DELETE CASCADE,
                    "token" TEXT NOT NULL UNIQUE,
                    "createdAt" TIMESTAMPTZ NOT NULL
                )
                """,
                #"ALTER TABLE "subscription" ADD COLUMN "originalTransactionId" TEXT"#,
            ]
        ),
        (
            "v12-previous-access-token",
            [
                #"ALTER TABLE "session" ADD COLUMN "previousAccessTokenHash" BYTEA"#,
                #"CREATE INDEX "session_previousAccessTokenHash" ON "session"("previousAccessTokenHash")"#,
            ]
        ),
        (
            // A user's memberships (role included) and owned resources in resource order: a resource list walks them
            // a page at a time.
            "v13-list-indexes",
            [
                #"CREATE INDEX "membership_userId_resourceId" ON "membership"("userId", "resourceId", "role")"#,
                #"CREATE INDEX "resource_ownerId_id" ON "resource"("ownerId", "id")"#,
            ]
        ),
        (
            // As in SQLite: one PIN attempt's audit rows share a random `attempt`; an erasure may drop it, nothing else.
            "v14-audit-attempt",
            [
                #"ALTER TABLE "auditEvent" ADD COLUMN "attempt" TEXT"#,
                #"CREATE INDEX "auditEvent_attempt" ON "auditEvent"("attempt")"#,
                guardFunction(
                    "auditEvent", message: "audit log is append-only",
                    allowUpdate: """
                        NEW."id" IS NOT DISTINCT FROM OLD."id" AND NEW."at" IS NOT DISTINCT FROM OLD."at"
                        AND NEW."kind" IS NOT DISTINCT FROM OLD."kind" AND NEW."method" IS NOT DISTINCT FROM OLD."method"
                        AND NEW."outcome" IS NOT DISTINCT FROM OLD."outcome" AND NEW."reason" IS NOT DISTINCT FROM OLD."reason"
                        AND (NEW."attempt" IS NOT DISTINCT FROM OLD."attempt" OR NEW."attempt" IS NULL)
                        AND OLD."actor" IN (SELECT "pseudonym" FROM "erasure")
                        """,
                    allowDelete: #"OLD."at" < coalesce((SELECT "cutoff" FROM "logRetention" WHERE "id" = 1), '-infinity')"#),
            ]
        ),
        (
            // As in SQLite: `membership_userId` is a prefix of `membership_userId_resourceId` (v13), which every lookup by
            // user searches as well. Dropped inside the migration's transaction, as v13 created its indexes (the runner
            // sends no statement outside one, so not CONCURRENTLY): the drop waits for the table's current statements.
            "v15-drop-redundant-membership-index",
            [
                #"DROP INDEX IF EXISTS "membership_userId""#,
            ]
        ),
        (
            // As in SQLite: the revocation ledger, keyed by a digest of the original transaction id, naming no one.
            "v16-app-store-ledger",
            [
                """
                CREATE TABLE "appStoreLedger" (
                    "originalKey" TEXT PRIMARY KEY,
                    "revokedAt" TIMESTAMPTZ,
                    "signedAt" TIMESTAMPTZ,
                    "updatedAt" TIMESTAMPTZ NOT NULL
                )
                """,
            ]
        ),
        (
            // As in SQLite: the App Store notifications already processed, each id once, kept for Apple's retry window.
            "v17-app-store-notification-seen",
            [
                """
                CREATE TABLE "appStoreNotificationSeen" (
                    "notificationId" TEXT PRIMARY KEY,
                    "receivedAt" TIMESTAMPTZ NOT NULL
                )
                """,
                #"CREATE INDEX "appStoreNotificationSeen_receivedAt" ON "appStoreNotificationSeen"("receivedAt")"#,
            ]
        ),
        (
            // As in SQLite: decision records hold the request as decided and the subject's keyed pseudonym, keyed by 32
            // bytes drawn once per deployment from the server's strong random source (gen_random_uuid, two draws); an
            // erasure may clear both, nothing else.
            "v18-decision-records",
            [
                #"ALTER TABLE "decisionLog" ADD COLUMN "subject" TEXT"#,
                #"ALTER TABLE "decisionLog" ADD COLUMN "facts" TEXT"#,
                #"CREATE INDEX "decisionLog_subject" ON "decisionLog"("subject")"#,
                #"CREATE TABLE "decisionKey" ("id" BIGINT PRIMARY KEY CHECK ("id" = 1), "key" BYTEA NOT NULL)"#,
                #"INSERT INTO "decisionKey" ("id", "key") VALUES (1, sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())))"#,
                guardFunction(
                    "decisionLog", message: "decision log is append-only",
                    allowUpdate: """
                        NEW."id" IS NOT DISTINCT FROM OLD."id" AND NEW."at" IS NOT DISTINCT FROM OLD."at"
                        AND NEW."action" IS NOT DISTINCT FROM OLD."action" AND NEW."resourceType" IS NOT DISTINCT FROM OLD."resourceType"
                        AND NEW."effect" IS NOT DISTINCT FROM OLD."effect" AND NEW."reason" IS NOT DISTINCT FROM OLD."reason"
                        AND NEW."policyHash" IS NOT DISTINCT FROM OLD."policyHash"
                        AND NEW."policyLocation" IS NOT DISTINCT FROM OLD."policyLocation"
                        AND (NEW."resourceId" IS NOT DISTINCT FROM OLD."resourceId" OR NEW."resourceId" IS NULL)
                        AND (NEW."subject" IS NOT DISTINCT FROM OLD."subject" OR NEW."subject" IS NULL)
                        AND (NEW."facts" IS NOT DISTINCT FROM OLD."facts" OR NEW."facts" IS NULL)
                        AND OLD."actor" IN (SELECT "pseudonym" FROM "erasure")
                        """,
                    allowDelete: #"OLD."at" < coalesce((SELECT "cutoff" FROM "logRetention" WHERE "id" = 1), '-infinity')"#),
            ]
        ),
        (
            // As in SQLite: an app role is any the policy set declares, so the check on v1's four names becomes a length.
            "v19-app-role-names",
            [
                #"ALTER TABLE "appRole" DROP CONSTRAINT "appRole_role_check""#,
                #"ALTER TABLE "appRole" ADD CONSTRAINT "appRole_role_check" CHECK (length("role") BETWEEN 1 AND 64)"#,
            ]
        ),
        (
            // As in SQLite: what each sign-in said about its device, for the console; NULL for older sessions.
            "v20-session-device",
            [
                #"ALTER TABLE "session" ADD COLUMN "device" TEXT"#,
            ]
        ),
        (
            // As in SQLite: a list's membership arm reads the joined resource's type and owner from the index on `id`
            // (an index-only scan once the table is vacuumed). Created inside the migration's transaction, as v13's.
            "v21-resource-list-cover",
            [
                #"CREATE INDEX "resource_id_type_ownerId" ON "resource"("id") INCLUDE ("type", "ownerId")"#,
            ]
        ),
        (
            // As in SQLite: a membership row carries its resource's type and owner, kept exact by triggers (a membership
            // written reads its resource's, whatever the write said; a resource's type or owner change rewrites its
            // memberships'), the existing rows filled here; a list's membership arm is one range of one index.
            "v22-membership-resource-facts",
            [
                #"ALTER TABLE "membership" ADD COLUMN "resourceType" TEXT, ADD COLUMN "resourceOwnerId" TEXT"#,
                """
                UPDATE "membership" SET "resourceType" = "r"."type", "resourceOwnerId" = "r"."ownerId"
                FROM "resource" "r" WHERE "r"."id" = "membership"."resourceId"
                """,
                """
                CREATE OR REPLACE FUNCTION "membership_resourceFacts"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
                BEGIN
                    SELECT "type", "ownerId" INTO NEW."resourceType", NEW."resourceOwnerId" FROM "resource" WHERE "id" = NEW."resourceId";
                    RETURN NEW;
                END $$
                """,
                """
                CREATE TRIGGER "membership_resourceFacts" BEFORE INSERT OR UPDATE OF "resourceId", "resourceType", "resourceOwnerId"
                ON "membership" FOR EACH ROW EXECUTE FUNCTION "membership_resourceFacts"()
                """,
                """
                CREATE OR REPLACE FUNCTION "resource_membershipFacts"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
                BEGIN
                    UPDATE "membership" SET "resourceType" = NEW."type", "resourceOwnerId" = NEW."ownerId" WHERE "resourceId" = NEW."id";
                    RETURN NULL;
                END $$
                """,
                """
                CREATE TRIGGER "resource_membershipFacts" AFTER UPDATE OF "id", "type", "ownerId" ON "resource" FOR EACH ROW
                WHEN (OLD."type" IS DISTINCT FROM NEW."type" OR OLD."ownerId" IS DISTINCT FROM NEW."ownerId" OR OLD."id" IS DISTINCT FROM NEW."id")
                EXECUTE FUNCTION "resource_membershipFacts"()
                """,
                #"CREATE INDEX "membership_userId_resourceType" ON "membership"("userId", "resourceType", "resourceId") INCLUDE ("role", "resourceOwnerId")"#,
            ]
        ),
        (
            // As in SQLite: the decision log's user indexes hold only the rows that name a user.
            "v23-decision-log-user-indexes",
            [
                #"DROP INDEX "decisionLog_actor""#,
                #"CREATE INDEX "decisionLog_actor" ON "decisionLog"("actor") WHERE "actor" IS NOT NULL"#,
                #"DROP INDEX "decisionLog_subject""#,
                #"CREATE INDEX "decisionLog_subject" ON "decisionLog"("subject") WHERE "subject" IS NOT NULL"#,
            ]
        ),
    ]
}
