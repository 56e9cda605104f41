import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `policy log`: the server's decision records, for `policy replay`.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log", abstract: "Work with a server's decision records.", subcommands: [LogPull.self])
}

/// `policy log pull`: pages of `GET /v1/operator/decisions` as NDJSON, appended to one file.
struct LogPull: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Save a server's decision records (newest first) as JSON lines for `policy replay`.",
        discussion: """
            Reads GET /v1/operator/decisions a page at a time (Accept: application/x-ndjson) with the operator \
            credential, until the filters match no more records or --max are saved.

              policy log pull --server https://gatehouse.internal --operator-token-file op.token --action add_source -o decisions.jsonl

            Exit codes: 0 saved; 1 the server refused or could not be reached; 64 usage error.
            """)

    @Option(help: "The server's base URL.")
    var server: String

    @Option(help: "A file holding the operator token (a token on the command line would be visible to every user).")
    var operatorTokenFile: String

    @Option(name: .shortAndLong, help: "Where to write the records ('-' for standard output).")
    var output: String = "-"

    @Option(help: "Records at or after this RFC 3339 time.") var from: String?
    @Option(help: "Records before this RFC 3339 time.") var to: String?
    @Option(help: "Records of this user id.") var user: String?
    @Option(help: "Records of this action.") var action: String?
    @Option(help: "Records of this resource type.") var resourceType: String?
    @Option(help: ArgumentHelp("Records with this effect.", valueName: "allow|deny")) var decision: String?
    @Option(help: "Records with this reason.") var reason: String?
    @Option(help: "Save at most this many records (default 100000).") var max: Int = 100_000

    func validate() throws {
        guard URL(string: server)?.scheme.map({ ["http", "https"].contains($0) }) == true else {
            throw ValidationError("--server must be an http or https URL, not '\(server)'")
        }
        guard max > 0 else { throw ValidationError("--max must be positive") }
    }

    func run() async throws {
        guard let tokenData = FileManager.default.contents(atPath: operatorTokenFile) else {
            throw ValidationError("cannot read --operator-token-file '\(operatorTokenFile)'")
        }
        let token = String(decoding: tokenData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        var filters: [URLQueryItem] = []
        for (name, value) in [
            ("from", from), ("to", to), ("user", user), ("action", action), ("resourceType", resourceType), ("decision", decision), ("reason", reason),
        ] {
            if let value { filters.append(URLQueryItem(name: name, value: value)) }
        }
        var out = Data()
        var saved = 0
        var cursor: String?
        repeat {
            let limit = min(1_000, max - saved)
            var components = URLComponents(string: server.hasSuffix("/") ? String(server.dropLast()) + "/v1/operator/decisions" : server + "/v1/operator/decisions")!
            components.queryItems = filters + [URLQueryItem(name: "limit", value: "\(limit)")] + (cursor.map { [URLQueryItem(name: "cursor", value: $0)] } ?? [])
            var request = URLRequest(url: components.url!)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue("application/x-ndjson", forHTTPHeaderField: "Accept")
            let (body, response): (Data, URLResponse)
            do {
                (body, response) = try await URLSession.shared.data(for: request)
            } catch {
                writeError("error: cannot reach \(server): \(error.localizedDescription)")
                throw Exit.policyErrors
            }
            let http = response as? HTTPURLResponse
            guard http?.statusCode == 200 else {
                writeError("error: \(components.path) answered \(http?.statusCode ?? 0): \(String(decoding: body.prefix(500), as: UTF8.self))")
                throw Exit.policyErrors
            }
            out.append(body)
            saved += body.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            cursor = http?.value(forHTTPHeaderField: "Gatehouse-Next-Cursor")
        } while cursor != nil && saved < max
        if output == "-" {
            FileHandle.standardOutput.write(out)
        } else {
            do { try out.write(to: URL(fileURLWithPath: output)) } catch {
                writeError("error: cannot write '\(output)': \(error.localizedDescription)")
                throw ExitCode(73)
            }
            writeError("saved \(saved) records to \(output)")
        }
    }
}
