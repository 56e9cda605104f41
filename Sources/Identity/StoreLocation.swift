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
        return value.contains("://") ? "(the URL given)" : value
    }

    /// Reads a database option's value. Throws `invalidInput` naming `field` for a PostgreSQL URL it
    /// cannot use; the message never repeats the URL (it may hold a password).
    public static func parse(_ value: String, field: String = "database") throws(IdentityError) -> IdentityStoreLocation {
        let lower = value.lowercased()
        guard lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") else {
            guard !value.isEmpty else { throw IdentityError(.invalidInput, field: field, "is empty") }
            return .sqlite(path: value)
        }
        return .postgres(try PostgresLocation(url: value, field: field))
    }
}

/// A PostgreSQL server, database and options parsed from
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require&max_connections=N&schema=NAME]`.
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    /// The URL's `sslmode`: whether the connection uses TLS.
    public enum SSLMode: String, Sendable, Hashable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, else plain TCP (the default).
        case prefer
        /// TLS or no connection.
        case require
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
    }

    /// Parses a `postgres://` or `postgresql://` URL. Throws `invalidInput` naming `field` for a URL
    /// without a host, user or database name, with an unknown option or a bad port; the message never
    /// repeats the URL.
    public init(url: String, field: String = "database") throws(IdentityError) {
        func bad(_ why: String) -> IdentityError {
            IdentityError(.invalidInput, field: field, "is not a usable PostgreSQL URL (\(why)); expected postgres://USER@HOST:PORT/DATABASE")
        }
        guard let parts = URLComponents(string: url) else { throw bad("it does not parse as a URL") }
        guard let host = parts.host, !host.isEmpty else { throw bad("no host") }
        guard let user = parts.user, !user.isEmpty else { throw bad("no user") }
        let name = String(parts.path.drop(while: { $0 == "/" }))
        guard !name.isEmpty, !name.contains("/") else { throw bad("no database name after the host") }
        if let port = parts.port, !(1...65535).contains(port) { throw bad("port out of range") }
        self.host = host
        self.port = parts.port ?? 5432
        self.username = parts.user?.removingPercentEncoding ?? user
        self.password = parts.password?.removingPercentEncoding
        self.database = name.removingPercentEncoding ?? name
        self.schema = nil
        self.sslMode = .prefer
        self.maxConnections = 20
        for item in parts.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode":
                guard let mode = SSLMode(rawValue: value) else { throw bad("sslmode must be disable, prefer or require") }
                sslMode = mode
            case "max_connections":
                guard let n = Int(value), (1...1000).contains(n) else { throw bad("max_connections must be 1 to 1000") }
                maxConnections = n
            case "schema":
                let ok = (1...63).contains(value.utf8.count)
                    && value.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F }
                guard ok else { throw bad("schema must be 1 to 63 lowercase letters, digits or '_'") }
                schema = value
            default:
                throw bad("unknown parameter '\(item.name)'; known: sslmode, max_connections, schema")
            }
        }
    }

    /// The URL without its password, for logs and messages.
    public var description: String {
        "postgres://\(username)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
    }
}
