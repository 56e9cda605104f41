import Foundation
import Hummingbird
import Synchronization
import Testing

@testable import PolicyServer

/// The request deadline's shared timer (`RequestDeadlines`, issue 41 item 1) and the request shape's byte checks: the
/// outcome of a handler that ends in time, nil for one that does not (its task cancelled), and nothing left watched.
@Suite struct RequestDeadlineTests {
    @Test func aHandlerThatEndsInTimeGivesItsOutcomeAndLeavesNothingWatched() async throws {
        let timers = RequestDeadlines()
        for i in 0..<200 {
            let outcome = await withinRequestDeadline(.seconds(3600), timers: timers) { .success(Response(status: i % 2 == 0 ? .ok : .accepted)) }
            #expect(try outcome?.get().status == (i % 2 == 0 ? .ok : .accepted))
        }
        #expect(timers.count == 0)
        let failed = await withinRequestDeadline(.seconds(3600), timers: timers) { .failure(HTTPError(.badRequest)) }
        #expect(throws: HTTPError.self) { try failed?.get() }
    }

    @Test func aHandlerPastTheDeadlineGivesNilAndIsCancelled() async throws {
        let timers = RequestDeadlines(tick: .milliseconds(5))
        let sawCancellation = Mutex(false)
        let outcome = await withinRequestDeadline(.milliseconds(20), timers: timers) {
            // Waits until cancelled (bounded: 30 s, far past the 20 ms deadline).
            for _ in 0..<3000 where !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
            sawCancellation.withLock { $0 = Task.isCancelled }
            return .success(Response(status: .ok))
        }
        #expect(outcome == nil)
        for _ in 0..<500 where !sawCancellation.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(sawCancellation.withLock { $0 }, "the handler was not cancelled at the deadline")
        #expect(timers.count == 0)
    }

    @Test func theCanonicalPathCheckAgreesWithTheStringOne() {
        let paths = ["/", "", "/v1/decide", "/v1/decide/", "//", "//v1", "/v1//decide", "v1/decide", "/a", "/a/b/c", "/a/", "a", "///"]
        for path in paths {
            let old = path == "/" || !(path.isEmpty || path.hasSuffix("/") || path.contains("//") || !path.hasPrefix("/"))
            #expect(RequestShapeMiddleware.isCanonical(path) == old, "\(path)")
        }
        for type in ["application/json", "application/json; charset=utf-8", "Application/JSON", "application/problem+json", "text/plain", "application/x-www-form-urlencoded"] {
            let media = type.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            #expect(RequestShapeMiddleware.isJSON(type) == (media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json"))), "\(type)")
        }
    }
}
