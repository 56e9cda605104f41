import HTTPTypes
import Testing

@testable import PolicyServer

/// `HTTPFields.value(_:)`, the request path's header lookup, gives what the fields' subscript gives: the value of a
/// field present once, nil for one absent, and the joined values of a repeated one (so a repeated Content-Type or
/// Content-Length is refused as before).
@Suite struct HeaderLookupTests {
    @Test func itReadsAsTheSubscriptDoes() {
        let cases: [HTTPFields] = [
            [:],
            [.contentType: "application/json"],
            [.contentType: "application/json", .contentLength: "12", .authorization: "Bearer abc"],
            HTTPFields([HTTPField(name: .contentLength, value: "5"), HTTPField(name: .contentLength, value: "5")]),
            HTTPFields([HTTPField(name: .contentType, value: "application/json"), HTTPField(name: .accept, value: "*/*"),
                        HTTPField(name: .contentType, value: "text/plain")]),
            HTTPFields([HTTPField(name: .cookie, value: "a=1"), HTTPField(name: .cookie, value: "b=2")]),
            HTTPFields([HTTPField(name: HTTPField.Name("Content-TYPE")!, value: "application/json")]),
        ]
        for fields in cases {
            for name in [HTTPField.Name.contentType, .contentLength, .authorization, .transferEncoding, .cookie] {
                #expect(fields.value(name) == fields[name], "\(name) in \(fields)")
            }
        }
        #expect(HTTPFields([HTTPField(name: .contentLength, value: "5"), HTTPField(name: .contentLength, value: "5")]).value(.contentLength) == "5, 5")
    }
}
