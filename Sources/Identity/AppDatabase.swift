import Foundation
import GRDB

/// The SQLite database of the identity layer: one `DatabasePool` in WAL mode and its migrations.
public final class AppDatabase: Sendable {
    /// The GRDB pool (WAL, `synchronous = FULL`, `secure_delete`); the store and the package's tests reach SQLite through it.
    package let pool: DatabasePool
    /// `pool` for the Benchmarks package's list runner (`gatehouse-bench --section lists`), which seeds its world and
    /// runs the plain `SELECT` a list is measured against through the pool the store reads by. Not API: an SPI.
    @_spi(Benchmarks) public var benchmarkPool: DatabasePool { pool }
    /// The numbers of this process's committed writes, so the commit probe tells them from other processes'.
    package let ownCommits = OwnCommits()

    /// Opens (creating if needed) the database at `path` and migrates it to the current schema.
    public init(path: String) throws {
        var config = Configuration()
        config.foreignKeysEnabled = true
        // Values (hashes, ids) must never reach SQL traces or error descriptions.
        config.publicStatementArguments = false
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in
            // Deleted rows (GDPR) are overwritten in the file, not left in free pages.
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        pool = try DatabasePool(path: path, configuration: config)
        // Every commit is on disk before it returns, so a crash loses no acknowledged session or
        // audit row. Set after opening: GRDB's WAL set-up puts the writer at NORMAL after
        // `prepareDatabase` has run. The writer connection lives as long as the pool.
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            guard try Int.fetchOne(db, sql: "PRAGMA synchronous") == 2 else {
                throw DatabaseError(message: "could not set synchronous = FULL")
            }
            ownCommits.checkpointsItself(on: db)
        }
        let applied = try pool.read { db -> [String] in
            guard try db.tableExists("grdb_migrations") else { return [] }
            return try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        }
        try Schema.refuseNewer(applied: applied)
        try AppDatabase.migrator.migrate(pool)
    }

    /// The named migrations, in the order they were introduced. Never edit one that has shipped.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for (name, sql) in Schema.migrations {
            migrator.registerMigration(name) { db in try db.execute(sql: sql) }
        }
        return migrator
    }

    /// `PRAGMA integrity_check` and `foreign_key_check`: empty when the file is consistent.
    public func integrityProblems() throws -> [String] {
        try pool.read { db in
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check").filter { $0 != "ok" }
            let fk = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").map { "foreign key: \($0)" }
            return integrity + fk
        }
    }

    /// Whether the database would take a write: a statement that writes nothing but needs write access
    /// (`DELETE ... WHERE 0` starts a write transaction, so a read-only file or connection refuses it with
    /// SQLITE_READONLY), rolled back.
    public func acceptsWrites() async -> Bool {
        do {
            try await pool.writeWithoutTransaction { db in
                try db.inTransaction {
                    try db.execute(sql: "DELETE FROM grdb_migrations WHERE 0")
                    return .rollback
                }
            }
            return true
        } catch {
            return false
        }
    }
}

/// The schema as SQL, one entry per named migration; docs/identity.md quotes it.
package enum Schema {
    /// The migration names this build knows, in order (PostgreSQL's are the same).
    package static var names: [String] { migrations.map(\.0) }

    /// Throws when the database has migrations this build does not know: a newer build migrated it, and
    /// this one would fail at request time on columns it does not write. The message names the database's
    /// unknown migrations and the newest this build knows.
    package static func refuseNewer(applied: some Sequence<String>) throws(IdentityError) {
        let known = Set(names)
        let unknown = Set(applied).subtracting(known).sorted()
        guard !unknown.isEmpty else { return }
        throw IdentityError(
            .storage, field: "database",
            "the database's schema is newer than this build: it has migration \(unknown.joined(separator: ", ")) applied, and this build knows "
                + "migrations up to \(names.last ?? "none"); run a build at least as new as the one that migrated it")
    }

    package static let migrations: [(String, String)] = [
        ("v1-accounts", """
            CREATE TABLE user (
                id TEXT PRIMARY KEY,
                pseudonym TEXT NOT NULL UNIQUE,          -- the only user reference the audit log holds
                username TEXT UNIQUE COLLATE NOCASE,
                displayName TEXT,
                email TEXT,
                isPrivateRelayEmail BOOLEAN NOT NULL DEFAULT 0,
                createdAt DATETIME NOT NULL
            );
            CREATE TABLE appRole (
                userId TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                role TEXT NOT NULL CHECK (role IN ('customer', 'driver', 'partner', 'admin')),
                PRIMARY KEY (userId, role)
            );
            CREATE TABLE appleIdentity (
                subject TEXT PRIMARY KEY,                -- Apple's stable user id (`sub`)
                userId TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                email TEXT,
                isPrivateRelay BOOLEAN NOT NULL DEFAULT 0,
                credentialState TEXT NOT NULL CHECK (credentialState IN ('authorized', 'revoked', 'notFound', 'transferred')),
                transferredTo TEXT,
                createdAt DATETIME NOT NULL,
                updatedAt DATETIME NOT NULL
            );
            CREATE INDEX appleIdentity_userId ON appleIdentity(userId);
            CREATE TABLE appleNonce (
                nonceHash BLOB PRIMARY KEY,              -- SHA-256 of the raw nonce, as Apple puts it in the token
                expiresAt DATETIME NOT NULL,
                usedAt DATETIME
            );
            CREATE TABLE pinCredential (
                userId TEXT PRIMARY KEY REFERENCES user(id) ON DELETE CASCADE,
                algorithm TEXT NOT NULL CHECK (algorithm IN ('pbkdf2-sha256', 'legacy-sha256')),
                rounds INTEGER NOT NULL,
                salt BLOB NOT NULL,
                hash BLOB NOT NULL,
                failedAttempts INTEGER NOT NULL DEFAULT 0,
                nextAttemptAt DATETIME,
                lockedAt DATETIME,
                updatedAt DATETIME NOT NULL
            );
            CREATE TABLE privacySettings (
                userId TEXT PRIMARY KEY REFERENCES user(id) ON DELETE CASCADE,
                analytics BOOLEAN NOT NULL DEFAULT 0,
                crashReporting BOOLEAN NOT NULL DEFAULT 0,
                aiSuggestions BOOLEAN NOT NULL DEFAULT 0,
                dataSharing TEXT NOT NULL DEFAULT 'none' CHECK (dataSharing IN ('none', 'minimal', 'standard')),
                updatedAt DATETIME NOT NULL
            );
            CREATE TABLE subscription (
                userId TEXT PRIMARY KEY REFERENCES user(id) ON DELETE CASCADE,
                tier TEXT NOT NULL,
                productId TEXT NOT NULL,
                expiresAt DATETIME,
                updatedAt DATETIME NOT NULL
            );
            """),
        ("v2-sessions-and-devices", """
            CREATE TABLE session (
                id TEXT PRIMARY KEY,
                userId TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                accessTokenHash BLOB NOT NULL UNIQUE,
                accessExpiresAt DATETIME NOT NULL,
                authMethod TEXT NOT NULL,
                authLevel INTEGER NOT NULL,
                verifiedAt DATETIME NOT NULL,
                createdAt DATETIME NOT NULL,
                lastSeenAt DATETIME NOT NULL,
                expiresAt DATETIME NOT NULL,             -- absolute lifetime
                revokedAt DATETIME,
                revokedReason TEXT
            );
            CREATE INDEX session_userId ON session(userId);
            CREATE TABLE refreshToken (
                tokenHash BLOB PRIMARY KEY,
                sessionId TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                createdAt DATETIME NOT NULL,
                rotatedAt DATETIME,
                successorHash BLOB
            );
            CREATE INDEX refreshToken_sessionId ON refreshToken(sessionId);
            CREATE TABLE deviceKey (
                id TEXT PRIMARY KEY,
                userId TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                deviceId TEXT NOT NULL,
                publicKey BLOB NOT NULL,                 -- P-256, X9.63 uncompressed
                failedAttempts INTEGER NOT NULL DEFAULT 0,
                lockedAt DATETIME,
                createdAt DATETIME NOT NULL,
                UNIQUE (userId, deviceId)
            );
            CREATE TABLE deviceChallenge (
                challengeHash BLOB PRIMARY KEY,
                deviceKeyId TEXT NOT NULL REFERENCES deviceKey(id) ON DELETE CASCADE,
                sessionId TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                expiresAt DATETIME NOT NULL,
                usedAt DATETIME
            );
            CREATE INDEX deviceChallenge_deviceKeyId ON deviceChallenge(deviceKeyId);
            CREATE INDEX deviceChallenge_sessionId ON deviceChallenge(sessionId);
            """),
        ("v3-spaces-and-usage", """
            CREATE TABLE resource (
                id TEXT PRIMARY KEY,
                type TEXT NOT NULL,
                name TEXT NOT NULL,
                ownerId TEXT NOT NULL REFERENCES user(id) ON DELETE RESTRICT,
                createdAt DATETIME NOT NULL
            );
            CREATE INDEX resource_ownerId ON resource(ownerId);
            CREATE TABLE membership (
                resourceId TEXT NOT NULL REFERENCES resource(id) ON DELETE CASCADE,
                userId TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                role TEXT NOT NULL CHECK (length(role) BETWEEN 1 AND 32 AND role NOT GLOB '*[^a-z_]*'),  -- roles come from the policy set
                joinedAt DATETIME NOT NULL,
                PRIMARY KEY (resourceId, userId)
            );
            CREATE INDEX membership_userId ON membership(userId);
            CREATE TABLE shareCode (
                codeHash BLOB PRIMARY KEY,
                resourceId TEXT NOT NULL REFERENCES resource(id) ON DELETE CASCADE,
                role TEXT NOT NULL CHECK (role <> 'owner' AND length(role) BETWEEN 1 AND 32 AND role NOT GLOB '*[^a-z_]*'),
                createdBy TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                createdAt DATETIME NOT NULL,
                expiresAt DATETIME NOT NULL,
                usedAt DATETIME
            );
            CREATE INDEX shareCode_resourceId ON shareCode(resourceId);
            CREATE INDEX shareCode_createdBy ON shareCode(createdBy);
            CREATE TABLE guessLimit (
                scope TEXT PRIMARY KEY,                  -- e.g. share-code guesses of one user
                windowStart DATETIME NOT NULL,
                failures INTEGER NOT NULL
            );
            CREATE TABLE usageCounter (
                resourceId TEXT NOT NULL REFERENCES resource(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                value INTEGER NOT NULL CHECK (value >= 0),
                PRIMARY KEY (resourceId, name)
            );
            """),
        ("v4-audit", """
            CREATE TABLE auditEvent (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                at DATETIME NOT NULL,
                kind TEXT NOT NULL,
                method TEXT,
                outcome TEXT NOT NULL,
                reason TEXT,
                actor TEXT                               -- user pseudonym; unlinkable once the user is deleted
            );
            CREATE INDEX auditEvent_actor ON auditEvent(actor);
            CREATE TRIGGER auditEvent_noUpdate BEFORE UPDATE ON auditEvent
                BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
            CREATE TRIGGER auditEvent_noDelete BEFORE DELETE ON auditEvent
                BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
            """),
        ("v5-decision-log", """
            CREATE TABLE decisionLog (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                at DATETIME NOT NULL,
                actor TEXT,                              -- user pseudonym, as in auditEvent
                action TEXT NOT NULL,
                resourceType TEXT NOT NULL,
                resourceId TEXT,
                effect TEXT NOT NULL,
                reason TEXT NOT NULL,
                policyHash TEXT NOT NULL,                -- content hash of the policy set that decided
                policyLocation TEXT
            );
            CREATE TRIGGER decisionLog_noUpdate BEFORE UPDATE ON decisionLog
                BEGIN SELECT RAISE(ABORT, 'decision log is append-only'); END;
            CREATE TRIGGER decisionLog_noDelete BEFORE DELETE ON decisionLog
                BEGIN SELECT RAISE(ABORT, 'decision log is append-only'); END;
            """),
        // Issue 12: refresh successors are keyed with a per-session secret that never leaves the server.
        ("v6-refresh-key", """
            ALTER TABLE session ADD COLUMN refreshKey BLOB;  -- 32 random bytes; keys the successor derivation
            UPDATE session SET refreshKey = randomblob(32);
            """),
        ("v7-pin-throttle", """
            CREATE TABLE pinThrottle (
                scope TEXT PRIMARY KEY,                  -- digest of an unknown username or a user id without a PIN
                failures INTEGER NOT NULL,
                lastFailureAt DATETIME NOT NULL
            );
            """),
        ("v8-user-usage", """
            CREATE TABLE userUsageCounter (
                userId TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                value INTEGER NOT NULL CHECK (value >= 0),
                PRIMARY KEY (userId, name)
            );
            """),
        ("v9-apple-state-time", """
            ALTER TABLE appleIdentity ADD COLUMN stateChangedAt DATETIME;
            UPDATE appleIdentity SET stateChangedAt = updatedAt;
            """),
        // The logs stay append-only with two exceptions, each guarded by a trigger: expiry by age
        // (rows older than the cutoff an operator set in logRetention), and erasure of a deleted
        // user (only `actor`, and a decision's `resourceId`, of rows whose actor is listed in
        // `erasure`, which the deletion transaction fills and empties).
        ("v10-log-retention-and-erasure", """
            CREATE TABLE logRetention (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                cutoff DATETIME NOT NULL                 -- rows older than this may be deleted
            );
            CREATE TABLE erasure (
                pseudonym TEXT PRIMARY KEY               -- filled and emptied inside one deletion transaction
            );
            DROP TRIGGER auditEvent_noUpdate;
            DROP TRIGGER auditEvent_noDelete;
            DROP TRIGGER decisionLog_noUpdate;
            DROP TRIGGER decisionLog_noDelete;
            CREATE TRIGGER auditEvent_noUpdate BEFORE UPDATE ON auditEvent
                WHEN NOT (NEW.id IS OLD.id AND NEW.at IS OLD.at AND NEW.kind IS OLD.kind AND NEW.method IS OLD.method
                    AND NEW.outcome IS OLD.outcome AND NEW.reason IS OLD.reason AND OLD.actor IN (SELECT pseudonym FROM erasure))
                BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
            CREATE TRIGGER auditEvent_noDelete BEFORE DELETE ON auditEvent
                WHEN NOT (OLD.at < coalesce((SELECT cutoff FROM logRetention WHERE id = 1), ''))
                BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
            CREATE TRIGGER decisionLog_noUpdate BEFORE UPDATE ON decisionLog
                WHEN NOT (NEW.id IS OLD.id AND NEW.at IS OLD.at AND NEW.action IS OLD.action AND NEW.resourceType IS OLD.resourceType
                    AND NEW.effect IS OLD.effect AND NEW.reason IS OLD.reason AND NEW.policyHash IS OLD.policyHash
                    AND NEW.policyLocation IS OLD.policyLocation AND (NEW.resourceId IS OLD.resourceId OR NEW.resourceId IS NULL)
                    AND OLD.actor IN (SELECT pseudonym FROM erasure))
                BEGIN SELECT RAISE(ABORT, 'decision log is append-only'); END;
            CREATE TRIGGER decisionLog_noDelete BEFORE DELETE ON decisionLog
                WHEN NOT (OLD.at < coalesce((SELECT cutoff FROM logRetention WHERE id = 1), ''))
                BEGIN SELECT RAISE(ABORT, 'decision log is append-only'); END;
            CREATE INDEX auditEvent_at ON auditEvent(at);
            CREATE INDEX decisionLog_at ON decisionLog(at);
            CREATE INDEX decisionLog_actor ON decisionLog(actor);
            """),
        // Issue 22: purchases are App Store signed transactions. One account per original transaction,
        // the last applied transaction's facts, the appAccountToken each account's purchases carry, and
        // which original transaction granted a subscription (a refund ends only that one).
        ("v11-app-store", """
            CREATE TABLE appStoreTransaction (
                originalTransactionId TEXT PRIMARY KEY,
                userId TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                transactionId TEXT NOT NULL,
                productId TEXT NOT NULL,
                environment TEXT NOT NULL CHECK (environment IN ('Production', 'Sandbox', 'Xcode')),
                expiresAt DATETIME,
                revokedAt DATETIME,
                signedAt DATETIME NOT NULL,              -- signedDate of the last applied transaction
                updatedAt DATETIME NOT NULL
            );
            CREATE INDEX appStoreTransaction_userId ON appStoreTransaction(userId);
            CREATE TABLE appAccountToken (
                userId TEXT PRIMARY KEY REFERENCES user(id) ON DELETE CASCADE,
                token TEXT NOT NULL UNIQUE,              -- lower-case UUID, StoreKit's appAccountToken
                createdAt DATETIME NOT NULL
            );
            ALTER TABLE subscription ADD COLUMN originalTransactionId TEXT;
            """),
        // The access token a refresh or step-up replaced, which may still sign its session out.
        ("v12-previous-access-token", """
            ALTER TABLE session ADD COLUMN previousAccessTokenHash BLOB;
            CREATE INDEX session_previousAccessTokenHash ON session(previousAccessTokenHash);
            """),
        // A user's memberships (role included) and owned resources in resource order: a resource list walks them a
        // page at a time (`IdentityService.listQuery`) instead of every resource of the type.
        ("v13-list-indexes", """
            CREATE INDEX membership_userId_resourceId ON membership(userId, resourceId, role);
            CREATE INDEX resource_ownerId_id ON resource(ownerId, id);
            """),
        // A checked PIN attempt's audit rows are linked: the `pending` row its reservation writes and the rows its
        // settle writes carry the same random `attempt`, so a `pending` row alone reads "checked, outcome not
        // recorded". An erasure may drop the link (so a deleted user's rows do not link to each other), nothing else.
        ("v14-audit-attempt", """
            ALTER TABLE auditEvent ADD COLUMN attempt TEXT;  -- random hex shared by one PIN attempt's rows; NULL otherwise
            CREATE INDEX auditEvent_attempt ON auditEvent(attempt);
            DROP TRIGGER auditEvent_noUpdate;
            CREATE TRIGGER auditEvent_noUpdate BEFORE UPDATE ON auditEvent
                WHEN NOT (NEW.id IS OLD.id AND NEW.at IS OLD.at AND NEW.kind IS OLD.kind AND NEW.method IS OLD.method
                    AND NEW.outcome IS OLD.outcome AND NEW.reason IS OLD.reason AND (NEW.attempt IS OLD.attempt OR NEW.attempt IS NULL)
                    AND OLD.actor IN (SELECT pseudonym FROM erasure))
                BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
            """),
        // `membership_userId` (v3) is a prefix of `membership_userId_resourceId` (v13): every lookup of a user's memberships
        // (the export, the erasure's cascade, the lists) searches the wider index as well, and each membership write paid
        // for both.
        ("v15-drop-redundant-membership-index", """
            DROP INDEX IF EXISTS membership_userId;
            """),
        // The revocation ledger (issue 36, N2): what is known of an original transaction whatever account holds it,
        // keyed by a digest of its id and naming no one. Refunds and revocations are written whether or not an account
        // holds the transaction, and a deleted account leaves a tombstone (the dates) of each original it held.
        ("v16-app-store-ledger", """
            CREATE TABLE appStoreLedger (
                originalKey TEXT PRIMARY KEY,            -- SHA-256 (hex) of the original transaction id, labelled
                revokedAt DATETIME,                      -- the latest revocationDate a verified refund or revocation gave
                signedAt DATETIME,                       -- tombstone: signedDate of the last transaction a deleted account applied
                updatedAt DATETIME NOT NULL
            );
            """),
        // The App Store notifications already processed (issue 36, N4): each id once, kept for Apple's retry window.
        ("v17-app-store-notification-seen", """
            CREATE TABLE appStoreNotificationSeen (
                notificationId TEXT PRIMARY KEY,         -- the notificationUUID, as Apple sent it
                receivedAt DATETIME NOT NULL
            );
            CREATE INDEX appStoreNotificationSeen_receivedAt ON appStoreNotificationSeen(receivedAt);
            """),
        // Issue 37: decision records hold the request as decided (`facts`, user ids pseudonymised with the key in
        // `decisionKey`, drawn here once per deployment) and the subject's keyed pseudonym, so they can be decided again.
        // An erasure may clear both (with `actor` and `resourceId`, as v10 allows), nothing else. Numbered after the
        // security round's v16 and v17.
        ("v18-decision-records", """
            ALTER TABLE decisionLog ADD COLUMN subject TEXT;  -- HMAC-SHA256 pseudonym of the subject's id; NULL signed out or erased
            ALTER TABLE decisionLog ADD COLUMN facts TEXT;    -- the request as decided, contract JSON, ids pseudonymised; NULL once erased
            CREATE INDEX decisionLog_subject ON decisionLog(subject);
            CREATE TABLE decisionKey (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                key BLOB NOT NULL                        -- keys the pseudonyms of decision records; never leaves the server
            );
            INSERT INTO decisionKey (id, key) VALUES (1, randomblob(32));
            DROP TRIGGER decisionLog_noUpdate;
            CREATE TRIGGER decisionLog_noUpdate BEFORE UPDATE ON decisionLog
                WHEN NOT (NEW.id IS OLD.id AND NEW.at IS OLD.at AND NEW.action IS OLD.action AND NEW.resourceType IS OLD.resourceType
                    AND NEW.effect IS OLD.effect AND NEW.reason IS OLD.reason AND NEW.policyHash IS OLD.policyHash
                    AND NEW.policyLocation IS OLD.policyLocation AND (NEW.resourceId IS OLD.resourceId OR NEW.resourceId IS NULL)
                    AND (NEW.subject IS OLD.subject OR NEW.subject IS NULL) AND (NEW.facts IS OLD.facts OR NEW.facts IS NULL)
                    AND OLD.actor IN (SELECT pseudonym FROM erasure))
                BEGIN SELECT RAISE(ABORT, 'decision log is append-only'); END;
            """),
        // Issue 43: app roles are the policy set's (`setAppRoles` refuses any the set does not declare), but v1 checked
        // for MimiSupply's four names, so a set declaring `support` could not grant it (a storage error). The check is
        // now only a length; SQLite cannot alter a check, so the table is rebuilt with its rows.
        ("v19-app-role-names", """
            CREATE TABLE appRole_v19 (
                userId TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                role TEXT NOT NULL CHECK (length(role) BETWEEN 1 AND 64),  -- a role the policy set declares
                PRIMARY KEY (userId, role)
            );
            INSERT INTO appRole_v19 (userId, role) SELECT userId, role FROM appRole;
            DROP TABLE appRole;
            ALTER TABLE appRole_v19 RENAME TO appRole;
            """),
        // Issue 43: what each sign-in said about its device (`SessionDevice`), for the console's session list; NULL for the
        // sessions before it, shown as unknown.
        ("v20-session-device", """
            ALTER TABLE session ADD COLUMN device TEXT;  -- declared name and User-Agent product, or the verifying device key; never read for a decision
            """),
        // Issue 41: a resource list's membership arm joins each listed membership to its resource for the type and the
        // owner the plan reads; with them in the index on `id` the join reads no table row (a covering index), so a page
        // costs about what a plain SELECT of the user's memberships does.
        ("v21-resource-list-cover", """
            CREATE INDEX resource_id_type_ownerId ON resource(id, type, ownerId);
            """),
        // Issue 41: a membership row carries its resource's type and owner, so a list's membership arm is one range of
        // one index (`membership(userId, resourceType, resourceId, role, resourceOwnerId)`) with no join. Triggers keep
        // the copies exact: a new or moved membership reads its resource's, and a resource's type or owner change
        // rewrites its memberships' (a resource's delete takes its memberships with it, v3's cascade). The existing rows
        // are filled here. A write that sets the copies to anything else is put right by the same triggers; a write that
        // names the right ones (a new space's owner row) costs the triggers one lookup and no second write of the row.
        ("v22-membership-resource-facts", """
            ALTER TABLE membership ADD COLUMN resourceType TEXT;     -- resource.type of resourceId, kept by triggers
            ALTER TABLE membership ADD COLUMN resourceOwnerId TEXT;  -- resource.ownerId of resourceId, kept by triggers
            UPDATE membership SET (resourceType, resourceOwnerId) = (SELECT type, ownerId FROM resource WHERE resource.id = membership.resourceId);
            CREATE TRIGGER membership_resourceFacts_insert AFTER INSERT ON membership
                WHEN (NEW.resourceType, NEW.resourceOwnerId) IS NOT (SELECT type, ownerId FROM resource WHERE id = NEW.resourceId)
                BEGIN
                    UPDATE membership SET (resourceType, resourceOwnerId) = (SELECT type, ownerId FROM resource WHERE id = NEW.resourceId)
                    WHERE rowid = NEW.rowid;
                END;
            CREATE TRIGGER membership_resourceFacts_update AFTER UPDATE OF resourceId, resourceType, resourceOwnerId ON membership
                WHEN (NEW.resourceType, NEW.resourceOwnerId) IS NOT (SELECT type, ownerId FROM resource WHERE id = NEW.resourceId)
                BEGIN
                    UPDATE membership SET (resourceType, resourceOwnerId) = (SELECT type, ownerId FROM resource WHERE id = NEW.resourceId)
                    WHERE rowid = NEW.rowid;
                END;
            CREATE TRIGGER resource_membershipFacts_update AFTER UPDATE OF id, type, ownerId ON resource
                BEGIN
                    UPDATE membership SET resourceType = NEW.type, resourceOwnerId = NEW.ownerId WHERE resourceId = NEW.id;
                END;
            CREATE INDEX membership_userId_resourceType ON membership(userId, resourceType, resourceId, role, resourceOwnerId);
            """),
        // Issue 37: the decision log's user indexes hold only the rows that name a user. A caller-named subject that is
        // no user of the store has no actor, a signed-out one neither actor nor subject, and an erased row no subject:
        // recording them cost an index entry no read could use. An erasure's `actor = ?` and a read's `subject = ?`
        // imply the column is not NULL, so both still search these indexes.
        ("v23-decision-log-user-indexes", """
            DROP INDEX decisionLog_actor;
            CREATE INDEX decisionLog_actor ON decisionLog(actor) WHERE actor IS NOT NULL;
            DROP INDEX decisionLog_subject;
            CREATE INDEX decisionLog_subject ON decisionLog(subject) WHERE subject IS NOT NULL;
            """),
    ]
}
