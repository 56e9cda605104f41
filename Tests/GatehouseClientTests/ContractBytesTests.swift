import Foundation
import GatehouseClient
@testable import Identity
import PolicyServer
import Testing

/// The client's `ProblemDetails` and `TokenPair` against the bytes the server writes for them.
@Suite struct ContractBytesTests {
    /// Each field the server writes decodes, and encoding gives back the same JSON value.
    @Test func problemsRoundTripThroughTheServersBytes() throws {
        var withField = Problem(.server(.invalidRequest), detail: "must be a string", field: "action")
        withField.kind = "wrong_type"
        withField.offset = 12
        let problems = [
            withField, Problem.throttled(retryAfter: 2.4), Problem.missingBearer, Problem.notFound,
            Problem(IdentityError(.invalidCredentials, field: "pin", "wrong PIN")),
        ]
        for problem in problems {
            let text = problem.json.rendered()
            let decoded = try JSONDecoder().decode(ProblemDetails.self, from: Data(text.utf8))
            let field: String? = problem.field.flatMap { $0.isEmpty ? nil : $0 }
            #expect(decoded.status == problem.status)
            #expect(decoded.code == problem.code.rawValue)
            #expect(decoded.title == problem.title)
            #expect(decoded.detail == problem.detail)
            #expect(decoded.field == field)
            #expect(decoded.retryAfter == problem.retryAfter)
            #expect(decoded.kind == problem.kind)
            #expect(decoded.offset == problem.offset)
            #expect(decoded.type == problem.code.typeURI)
            let again = String(decoding: try JSONEncoder().encode(decoded), as: UTF8.self)
            #expect(try Value.parseJSON(again) == Value.parseJSON(text), "\(text)")
            let error = GatehouseClientError(decoded)
            #expect(error.code == problem.code.rawValue)
            #expect(error.field == decoded.field)
            #expect(error.retryAfter == decoded.retryAfter)
        }
        #expect(GatehouseClientError(try JSONDecoder().decode(ProblemDetails.self, from: Data(Problem.throttled(retryAfter: 2.4).json.rendered().utf8))).retryAfter == 3)
    }

    /// The token pair as `GatehouseServer.tokens` writes it, with and without a fraction of a second.
    @Test func tokenPairsRoundTripThroughTheServersBytes() throws {
        for expiry in [Date(timeIntervalSince1970: 1_800_000_000), Date(timeIntervalSince1970: 1_800_000_000.125)] {
            let tokens = SessionTokens(sessionId: "s1", userId: "u1", accessToken: "gha_abc", accessExpiresAt: expiry, refreshToken: "ghr_def")
            let text = GatehouseServer.tokens(tokens).rendered()
            let pair = try JSONDecoder().decode(TokenPair.self, from: Data(text.utf8))
            #expect(pair == TokenPair(accessToken: "gha_abc", accessExpiresAt: expiry, refreshToken: "ghr_def", userId: "u1"))
            let again = String(decoding: try JSONEncoder().encode(pair), as: UTF8.self)
            #expect(try Value.parseJSON(again) == Value.parseJSON(text), "\(text)")
        }
        let bad = #"{"accessToken":"a","accessExpiresAt":"tomorrow","refreshToken":"r","userId":"u"}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(TokenPair.self, from: Data(bad.utf8)) }
    }
}
