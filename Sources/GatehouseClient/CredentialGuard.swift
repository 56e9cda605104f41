package import Foundation
package import HTTPTypes
package import OpenAPIRuntime
import Synchronization
#if canImport(FoundationNetworking)
package import FoundationNetworking
#endif

/// Where the client may send credentials: the rules behind `GatehouseClient`'s transport (N7, issue 36).
package enum CredentialPolicy {
    /// The client's own code for a server URL it refuses to send anything to: plain `http://` to another machine.
    package static let insecureTransport = "insecure_transport"
    /// The client's own code for a redirect it did not follow: to another origin than the server's.
    package static let redirectRefused = "redirect_refused"

    /// Why requests to `serverURL` are refused, nil when they may go: `http://` is for this machine only (the
    /// loopback addresses and `localhost`) unless `allowsInsecureHTTP`; any other scheme than http and https is refused.
    package static func refusal(serverURL: URL, allowsInsecureHTTP: Bool) -> GatehouseClientError? {
        switch serverURL.scheme?.lowercased() {
        case "https"?: return nil
        case "http"?:
            if allowsInsecureHTTP || isLoopback(host: serverURL.host ?? "") { return nil }
            return GatehouseClientError(
                code: insecureTransport,
                detail: "the server URL is plain http to another machine: tokens and PINs would cross the network unencrypted; use https "
                    + "(http is allowed for 127.0.0.1, ::1 and localhost, or with allowsInsecureHTTP for development)",
                field: "serverURL")
        default:
            return GatehouseClientError(code: insecureTransport, detail: "the server URL must be https (or http on this machine)", field: "serverURL")
        }
    }

    /// Whether `host` names this machine: `localhost`, an address of 127.0.0.0/8, or `::1` (bracketed or not).
    package static func isLoopback(host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "localhost" || name == "::1" || name == "0:0:0:0:0:0:0:1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ $0.count <= 3 && UInt8($0) != nil }) else { return false }
        return parts[0] == "127"
    }

    /// Whether two URLs share an origin: scheme, host and port (the scheme's default when absent).
    package static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int)? {
            guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
            let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
            return (scheme, host, port)
        }
        guard let x = origin(a), let y = origin(b) else { return false }
        return x == y
    }
}

/// The URLSession delegate of the client's transport: collects each task's answer and decides every redirect.
///
/// A redirect to another origin (scheme, host or port) is never followed, so neither the `Authorization` header nor
/// a body holding a refresh token or a PIN goes there; the 3xx itself becomes the answer, which the middleware turns
/// into `redirect_refused`. A redirect within the origin is followed. Tasks are plain data tasks driven by this
/// delegate (on Linux, swift-corelibs-foundation follows redirects of completion-handler tasks without asking any
/// delegate), and an answer is bounded in size.
final class CredentialGuard: NSObject, URLSessionDataDelegate, Sendable {
    /// The largest answer kept (the server's largest, a bundle or a list page, is far smaller).
    static let answerLimit = 32 << 20

    private struct Pending: @unchecked Sendable {  // URLResponse is not Sendable on Linux; guarded by `pending`
        var continuation: CheckedContinuation<(URLResponse, Data), any Error>
        var response: URLResponse?
        var data = Data()
        var tooLarge = false
    }

    private let pending = Mutex<[Int: Pending]>([:])

    /// Sends `request` and waits for the whole answer.
    func send(_ request: URLRequest, on session: URLSession) async throws -> (URLResponse, Data) {
        let task = session.dataTask(with: request)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                pending.withLock { $0[task.taskIdentifier] = Pending(continuation: continuation) }
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let from = task.originalRequest?.url, let to = request.url, CredentialPolicy.sameOrigin(from, to) else {
            completionHandler(nil)  // the 3xx is the answer
            return
        }
        completionHandler(request)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        pending.withLock { $0[dataTask.taskIdentifier]?.response = response }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let over = pending.withLock { all -> Bool in
            guard var entry = all[dataTask.taskIdentifier], !entry.tooLarge else { return false }
            if entry.data.count + data.count > Self.answerLimit {
                entry.tooLarge = true
                all[dataTask.taskIdentifier] = entry
                return true
            }
            entry.data.append(data)
            all[dataTask.taskIdentifier] = entry
            return false
        }
        if over { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if entry.tooLarge {
            entry.continuation.resume(throwing: GatehouseClientError(code: GatehouseClientError.unexpectedResponse, detail: "the answer is too large"))
        } else if let error {
            entry.continuation.resume(throwing: error)
        } else if let response = entry.response ?? task.response {
            entry.continuation.resume(returning: (response, entry.data))
        } else {
            entry.continuation.resume(throwing: URLError(.badServerResponse))
        }
    }
}

/// The client's transport: the generated client's requests as URLSession data tasks under a `CredentialGuard`.
struct GuardedTransport: ClientTransport {
    let session: URLSession
    let guardian: CredentialGuard

    /// A session of `configuration` whose delegate is a new `CredentialGuard`.
    init(configuration: URLSessionConfiguration) {
        guardian = CredentialGuard()
        session = URLSession(configuration: configuration, delegate: guardian, delegateQueue: nil)
    }

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
        let base = baseURL.absoluteString
        guard let url = URL(string: (base.hasSuffix("/") ? String(base.dropLast()) : base) + (request.path ?? "")) else {
            throw GatehouseClientError(code: GatehouseClientError.transport, detail: "the request's URL is not valid")
        }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method.rawValue
        for field in request.headerFields { urlRequest.addValue(field.value, forHTTPHeaderField: field.name.canonicalName) }
        if let body { urlRequest.httpBody = try await Data(collecting: body, upTo: .max) }
        try Task.checkCancellation()
        let (response, data) = try await guardian.send(urlRequest, on: session)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var fields = HTTPFields()
        for (name, value) in http.allHeaderFields {
            guard let text = name as? String, let name = HTTPField.Name(text), let value = value as? String else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        return (HTTPResponse(status: .init(code: http.statusCode), headerFields: fields), HTTPBody(data))
    }
}
