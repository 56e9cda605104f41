// A walk through GatehouseClient against a local `policy serve` of the research-crawler policy set
// (examples/client/README.md): an anonymous session, an account with a PIN, the feature gates and the
// sources limit as the server decides them, the profile, and sign-out.
//
//   swift run gatehouse-client-example [SERVER_URL] [--username NAME] [--pin DIGITS]
import Foundation
import GatehouseClient

@MainActor func line(_ action: String, _ decision: Decision) {
    var text = "\(action): \(decision.effect.rawValue) (\(decision.reason.rawValue))"
    if let message = decision.message { text += " \(message)" }
    print(text)
}

var arguments = Array(CommandLine.arguments.dropFirst())
@MainActor func option(_ name: String) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    defer { arguments.removeSubrange(i...(i + 1)) }
    return arguments[i + 1]
}
let username = option("--username") ?? "reader-\(UInt32.random(in: 0...UInt32.max))"
let pin = option("--pin") ?? String(format: "%06d", Int.random(in: 100_000...999_999))
guard let server = URL(string: arguments.first ?? ProcessInfo.processInfo.environment["GATEHOUSE_URL"] ?? "http://127.0.0.1:8080") else {
    print("usage: gatehouse-client-example [SERVER_URL] [--username NAME] [--pin DIGITS]")
    exit(64)
}

let client = GatehouseClient(serverURL: server)
let app = Resource(type: "app")
do {
    // Signed out: the server decides for a signed-out subject.
    line("signed out, ai_suggestions", try await client.decide(action: "ai_suggestions", resource: app))

    let anonymous = try await client.signInAnonymously()
    print("anonymous session: \(anonymous)")

    try await client.register(username: username, pin: pin)
    let me = try await client.me()
    print("registered \(me.username ?? "?") as \(me.userId), tier \(me.tier ?? "free")")

    // One request for several buttons: what to enable, and the message behind each disabled one.
    let gates = try await client.check(actions: ["ai_suggestions", "cloud_sync", "add_source"], resource: app)
    for action in gates.keys.sorted() { line(action, gates[action]!) }

    try await client.signOut()
    print("signed out: \(await client.state)")
} catch let error as GatehouseClientError {
    print("error: \(error)")
    exit(1)
}
