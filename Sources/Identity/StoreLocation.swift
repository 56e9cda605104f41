import Foundation

/// Which store a `--database` value names: a `postgres://` (or `postgresql://`) URL picks PostgreSQL,
/// anything else is the path of a SQLite file.
public enum IdentityStoreLocation: Sendable, Hashable, CustomStringConvertible {
    /// A SQLite file at `path` (created if missing).
    case sqlite(path: String)
    /// A PostgreSQL database.
    case postgres(PostgresLocation)

    /// The path, or the URL without its password: safe for logs and messages.
    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let location): location.description
        }
    }

    /// How `value` is shown in a message: as `description` when it parses, else as given unless it
    /// looks like a URL (which might hold a password).
    public static func shown(_ value: String) -> String {
        if let location = try? parse(value) { return location.description }
        return looksLikeURL(value) ? "(the URL given)" : value
    }

    /// Reads a database option's value. Throws `invalidInput` naming `field` for a PostgreSQL URL it
    /// cannot use, and for a value that looks like a URL of any other form (`looksLikeURL`: a mistyped
    /// `postgres:://`, `postgres:/`, `mysql://`), which is never taken for a SQLite path; the message never
    /// repeats the value (it may hold a password).
    public static func parse(_ value: String, field: String = "database") throws(IdentityError) -> IdentityStoreLocation {
        let lower = value.lowercased()
        guard lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") else {
            guard !value.isEmpty else { throw IdentityError(.invalidInput, field: field, "is empty") }
            if looksLikeURL(value) {
                throw IdentityError(
                    .invalidInput, field: field,
                    "looks like a URL but is not postgres://USER@HOST:PORT/DATABASE (a SQLite path that starts with a word and ':' can be written ./NAME)")
            }
            return .sqlite(path: value)
        }
        return .postgres(try PostgresLocation(url: value, field: field))
    }
}

extension IdentityStoreLocation {
    /// Whether `value` reads as a URL rather than a file path: it starts with a scheme of two or more characters and a
    /// colon (`postgres:`, `mysql:`; a one-letter drive such as `C:` is a path), holds `://`, starts with
    /// `postgres` and holds an `@` (`postgres//user:password@host`), or starts with `//` and holds an `@` (the scheme
    /// left out: `//user:password@host/db`). Such a value may carry a password.
    static func looksLikeURL(_ value: String) -> Bool {
        if value.contains("://") { return true }
        if value.hasPrefix("//"), value.contains("@") { return true }
        if value.lowercased().hasPrefix("postgres"), value.contains("@") { return true }
        guard let colon = value.unicodeScalars.firstIndex(of: ":") else { return false }
        let scheme = value.unicodeScalars[..<colon]
        func letter(_ c: Unicode.Scalar) -> Bool { ("a"..."z").contains(c) || ("A"..."Z").contains(c) }
        guard scheme.count >= 2, let first = scheme.first, letter(first) else { return false }
        return scheme.allSatisfy { letter($0) || ("0"..."9").contains($0) || $0 == "+" || $0 == "." || $0 == "-" }
    }
}

/// A PostgreSQL server, database and options parsed from
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...&sslrootcert=FILE&max_connections=N&schema=NAME&...]`;
/// docs/deploy.md lists every option and its default.
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    /// The URL's `sslmode`: whether the connection uses TLS, and what it checks of the server's certificate.
    public enum SSLMode: String, Sendable, Hashable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, else plain TCP (the default).
        case prefer
        /// TLS or no connection; the certificate must chain to a trusted root (the system's, or `sslrootcert`)
        /// and name the host.
        case require
        /// As `require`, without checking the host name (a certificate for another name is accepted).
        case verifyCA = "verify-ca"
        /// As `require`: the chain and the host name are checked (libpq's strictest mode, spelled as libpq does).
        case verifyFull = "verify-full"
    }
    /// The deadlines the store keeps on the database (docs/deploy.md): each missed one is a
    /// `storage_unavailable` refusal, never a wait and never an allow.
    public struct Deadlines: Sendable, Hashable {
        /// `statement_timeout`: the longest one statement may run.
        public var statement: Duration = .seconds(5)
        /// `lock_timeout`: the longest one statement may wait for a lock.
        public var lock: Duration = .seconds(2)
        /// `idle_in_transaction_session_timeout`: a connection idle inside a transaction this long is closed
        /// by the server, so a stuck client cannot hold its locks.
        public var idleInTransaction: Duration = .seconds(10)
        /// How long a request waits for a connection from the pool (all busy, or the server unreachable).
        public var pool: Duration = .seconds(3)
        /// How long opening one connection may take.
        public var connect: Duration = .seconds(3)
        /// How long `/readyz` waits for its checks in all.
        public var readiness: Duration = .seconds(2)

        /// The documented defaults (docs/deploy.md).
        public init() {}
    }
    /// The server's host name or address.
    public var host: String
    /// The server's TCP port (default 5432).
    public var port: Int
    /// The role to connect as.
    public var username: String
    /// The role's password, if the URL gave one; never shown by `description`.
    public var password: String?
    /// The database name.
    public var database: String
    /// The schema the tables live in (`schema=`); nil: the server's default search path.
    public var schema: String?
    /// Whether the connection uses TLS (`sslmode=`, default `prefer`).
    public var sslMode: SSLMode
    /// The connection pool's size per process (`max_connections`, default 20).
    public var maxConnections: Int
    /// A PEM file of the certificates the server's chain may end at (`sslrootcert`), in place of the
    /// system's roots: a private CA, as managed databases use.
    public var sslRootCert: String?
    /// The deadlines on the database (`statement_timeout`, `lock_timeout`, `idle_in_transaction_session_timeout`,
    /// `pool_timeout`, `connect_timeout`, `readiness_timeout`, in milliseconds in the URL).
    public var deadlines = Deadlines()

    /// A location with every value given (what a URL would say); the rest take PostgreSQL's and the pool's
    /// defaults. `PostgresStore` connects with it as it is: nothing here is checked until then.
    public init(
        host: String, port: Int = 5432, username: String, password: String? = nil, database: String, schema: String? = nil,
        sslMode: SSLMode = .prefer, maxConnections: Int = 20
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.schema = schema
        self.sslMode = sslMode
        self.maxConnections = maxConnections
        self.sslRootCert = nil
    }

    /// Parses a `postgres://` or `postgresql://` URL. Throws `invalidInput` naming `field` for a URL
    /// without a host, user or database name, with an unknown option or a bad port; the message never
    /// repeats the URL.
    public init(url: String, field: String = "database") throws(IdentityError) {
        func bad(_ why: String) -> IdentityError {
            IdentityError(.invalidInput, field: field, "is not a usable PostgreSQL URL (\(why)); expected postgres://USER@HOST:PORT/DATABASE")
        }
        guard let parts = URLComponents(string: url) else { throw bad("it does not parse as a URL") }
        guard var host = parts.host, !host.isEmpty else { throw bad("no host") }
        // An IPv6 literal is the address without its brackets (Foundation on Linux keeps them; the driver and the
        // description want the bare address), and a host, once decoded, is a name or an address: a percent-encoded `@`,
        // `/`, `?`, `#`, space or non-ASCII letter would make the description, which operators see as the store, name
        // another place (`postgres://user@emt@other:5432/db`).
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let ipv6 = host.contains(":")
        let hostByte: (UInt8) -> Bool = { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x2D || b == 0x5F
                || (ipv6 && b == 0x3A)
        }
        guard !host.isEmpty, host.utf8.allSatisfy(hostByte) else {
            throw bad("the host must be a name or an address: letters, digits, '.', '-', '_' (or an IPv6 address in brackets)")
        }
        guard parts.user?.isEmpty == false else { throw bad("no user") }
        let name = String(parts.path.drop(while: { $0 == "/" }))
        guard !name.isEmpty, !name.contains("/") else { throw bad("no database name after the host") }
        if let port = parts.port, !(1...65535).contains(port) { throw bad("port out of range") }
        // URLComponents has decoded `user`, `password` and `path` already: decode the raw forms once, so a
        // `%25` in a password stays a `%` (decoding the decoded form again turned `%2541` into `A`).
        guard let username = parts.percentEncodedUser?.removingPercentEncoding,
            let database = String(parts.percentEncodedPath.drop(while: { $0 == "/" })).removingPercentEncoding
        else { throw bad("a user or database name is not valid percent-encoding") }
        self.host = host
        self.port = parts.port ?? 5432
        self.username = username
        self.password = parts.percentEncodedPassword.map { $0.removingPercentEncoding ?? $0 }
        self.database = database
        self.schema = nil
        self.sslMode = .prefer
        self.maxConnections = 20
        self.sslRootCert = nil
        func milliseconds(_ name: String, _ value: String) throws(IdentityError) -> Duration {
            guard let n = Int(value), (1...3_600_000).contains(n) else { throw bad("\(name) must be 1 to 3600000 milliseconds") }
            return .milliseconds(n)
        }
        for item in parts.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode":
                guard let mode = SSLMode(rawValue: value) else {
                    throw bad("sslmode must be \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                sslMode = mode
            case "sslrootcert":
                guard !value.isEmpty else { throw bad("sslrootcert must name a PEM file") }
                sslRootCert = value
            case "statement_timeout": deadlines.statement = try milliseconds(item.name, value)
            case "lock_timeout": deadlines.lock = try milliseconds(item.name, value)
            case "idle_in_transaction_session_timeout": deadlines.idleInTransaction = try milliseconds(item.name, value)
            case "pool_timeout": deadlines.pool = try milliseconds(item.name, value)
            case "connect_timeout": deadlines.connect = try milliseconds(item.name, value)
            case "readiness_timeout": deadlines.readiness = try milliseconds(item.name, value)
            case "max_connections":
                guard let n = Int(value), (1...1000).contains(n) else { throw bad("max_connections must be 1 to 1000") }
                maxConnections = n
            case "schema":
                let ok = (1...63).contains(value.utf8.count)
                    && value.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F }
                guard ok else { throw bad("schema must be 1 to 63 lowercase letters, digits or '_'") }
                schema = value
            default:
                throw bad("unknown parameter '\(item.name)'; known: \(Self.parameters.joined(separator: ", "))")
            }
        }
        if sslRootCert != nil, sslMode == .disable || sslMode == .prefer {
            throw bad("sslrootcert needs sslmode=require, verify-ca or verify-full")
        }
    }

    /// The URL's query parameters.
    public static let parameters = [
        "sslmode", "sslrootcert", "max_connections", "schema", "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout",
        "pool_timeout", "connect_timeout", "readiness_timeout",
    ]

    /// The URL without its password, for logs and messages.
    public var description: String {
        "postgres://\(username)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
    }
}
