import Foundation
import FuzzSupport
import Identity

/// libFuzzer entry for the `--database` reader (`IdentityStoreLocation.parse`, `PostgresLocation(url:)`,
/// `IdentityStoreLocation.shown`). The first byte picks a mode:
/// - plain (0): the rest is the option's value.
/// - password (1): the bytes choose a password (percent-encoded into a URL with a chosen host, port, database and
///   query), so every URL carries a secret.
/// Besides a trap or hang, a finding is: the password (as given or decoded, when at least 4 bytes) in an error, in a
/// location's `description` or in what `shown` prints; a refusal that does not name the field; a location accepted
/// with an empty host, user or database, a port outside 1...65535, or a root certificate without a verifying
/// `sslmode`; a URL accepted whose `description` does not parse again to the same host, port, user and database.
public func fuzzPostgresURL(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    if input.byte() % 2 == 0 {
        let value = String(decoding: input.rest(), as: UTF8.self)
        let password = URLComponents(string: value)?.password
        let encoded = URLComponents(string: value)?.percentEncodedPassword
        check(value, secrets: [password, encoded].compactMap { $0 }, elsewhere: removingFirst(encoded.map { ":\($0)@" }, from: value))
        return
    }
    let password = input.string(max: 40)
    let allowed = CharacterSet.urlPasswordAllowed.subtracting(CharacterSet(charactersIn: "%"))
    let encoded = input.bool() ? (password.addingPercentEncoding(withAllowedCharacters: allowed) ?? password) : password
    let host = input.pick(["localhost", "db.example", "[::1]", "127.0.0.1", "", input.string(max: 16)])
    let port = input.pick(["", ":5432", ":0", ":65536", ":-1", ":" + input.string(max: 6)])
    let database = input.pick(["/gatehouse", "/", "", "/a/b", "/%2F", "/" + input.string(max: 16)])
    let query = input.pick(["", "?sslmode=require", "?sslmode=disable&sslrootcert=ca.pem", "?schema=s1", "?max_connections=0", "?" + input.string(max: 32)])
    let scheme = input.pick(["postgres", "postgresql", "POSTGRES", "postgres:"])
    check("\(scheme)://user:\(encoded)@\(host)\(port)\(database)\(query)", secrets: [password, encoded],
        elsewhere: "\(scheme)://user:@\(host)\(port)\(database)\(query)")
}

/// `value` without the first occurrence of `part` (bytes, as `occurrences` compares them); `value` when `part` is nil or absent.
func removingFirst(_ part: String?, from value: String) -> String {
    guard let part else { return value }
    let p = Array(part.utf8), v = Array(value.utf8)
    guard !p.isEmpty, p.count <= v.count, let i = (0...(v.count - p.count)).first(where: { v[$0..<$0 + p.count].elementsEqual(p) }) else { return value }
    return String(decoding: v[..<i] + v[(i + p.count)...], as: UTF8.self)
}

/// `elsewhere`: the URL without its password, so a secret the URL also holds elsewhere (in its host, database or query,
/// which the reader may show) is not taken for a leak: round r12 found `\0;;;;;` as a password that the database name
/// `;\x01\0\0\0\x08\0;;;;;;;;;` also held, and the shown location named the database.
func check(_ value: String, secrets: [String], elsewhere: String) {
    // A secret counts when it is at least 6 bytes, and it is not text the URL holds outside its password or the messages
    // hold anyway. Byte-level search (`occurrences`): Foundation's `contains` on Linux misreads strings holding NUL
    // characters.
    let secrets = Set(secrets).filter { secret in
        secret.utf8.count >= 6 && occurrences(of: secret, in: elsewhere) == 0 && occurrences(of: secret, in: Messages.text) == 0
    }
    func leaks(_ text: String) -> Bool { secrets.contains { occurrences(of: $0, in: text) > 0 } }
    if leaks(IdentityStoreLocation.shown(value)) { finding("shown() repeats the password") }
    do {
        let location = try IdentityStoreLocation.parse(value, field: "database")
        if leaks(location.description) { finding("a location's description repeats the password") }
        guard case .postgres(let pg) = location else {
            if value.lowercased().hasPrefix("postgres://") || value.lowercased().hasPrefix("postgresql://") { finding("a postgres URL read as a SQLite path") }
            return
        }
        if pg.host.isEmpty || pg.username.isEmpty || pg.database.isEmpty { finding("accepted without a host, user or database") }
        if !(1...65535).contains(pg.port) { finding("accepted the port \(pg.port)") }
        if pg.sslRootCert != nil, pg.sslMode == .disable || pg.sslMode == .prefer { finding("accepted a root certificate it will not check") }
        if !(1...1000).contains(pg.maxConnections) { finding("accepted max_connections \(pg.maxConnections)") }
        // What the description names must read again as the same place (it is shown to operators as the store).
        if !pg.host.contains("%"), !pg.username.contains(where: { "@:/?#[]%".contains($0) }), !pg.database.contains(where: { "/?#%".contains($0) }),
            pg.username.allSatisfy({ $0.isASCII && !$0.isWhitespace }), pg.database.allSatisfy({ $0.isASCII && !$0.isWhitespace }),
            let again = try? PostgresLocation(url: pg.description), again.host != pg.host || again.port != pg.port || again.username != pg.username || again.database != pg.database
        {
            finding("the description \(pg.description) reads as another place")
        }
    } catch {
        if error.field != "database" { finding("a refusal names \(error.field)") }
        if leaks(error.reason) || leaks(error.description) { finding("an error repeats the password: \(error.reason)") }
    }
}

/// The fixed text of the reader's messages, so a password that happens to be a word of them is not taken for a leak.
enum Messages {
    static let text: String = {
        let bad = [
            "postgres://", "postgres://h/db", "postgres://u@/db", "postgres://u@h", "postgres://u@h:0/db", "postgres://u@h/db?sslmode=x",
            "postgres://u@h/db?sslrootcert=", "postgres://u@h/db?max_connections=0", "postgres://u@h/db?schema=A", "postgres://u@h/db?x=1",
            "postgres://u@h/db?lock_timeout=0", "postgres://u@h/db?sslrootcert=a", "postgres://%zz@h/db", "postgres://u@h/%zz", "postgres://u@h/a/b",
        ]
        let texts: [String] = bad.map { (value: String) -> String in
            do throws(IdentityError) { return try PostgresLocation(url: value).description } catch { return error.description + " " + error.reason }
        }
        return texts.joined(separator: "\n") + PostgresLocation.parameters.joined(separator: ", ") + "postgres://@:5432/(the URL given)"
    }()
}

