// A child process for the crash test: signs in anonymously in a tight loop on several tasks and
// prints "committed <sessionId>" after each commit, until it is killed.
import Foundation
import Identity

let args = CommandLine.arguments
guard args.count == 2 else {
    FileHandle.standardError.write(Data("usage: identity-crash-writer DATABASE\n".utf8))
    exit(64)
}
let database = try AppDatabase(path: args[1])
var configuration = IdentityConfiguration(apple: AppleSignInConfiguration(clientIds: ["crash.writer"]))
configuration.pin = .unsafeForTesting(rounds: 1000)
configuration.abuse.signUps = .max  // one source signing up without pause is the point here
let service = IdentityService(
    store: SQLiteStore(database), configuration: configuration,
    jwksFetcher: FileJWKSFetcher(url: URL(fileURLWithPath: "/dev/null")))

FileHandle.standardOutput.write(Data("ready\n".utf8))
await withThrowingTaskGroup(of: Void.self) { group in
    for _ in 0..<4 {
        group.addTask {
            while true {
                let tokens = try await service.signInAnonymously(source: .inProcess)
                // One write(2) per line: lines from different tasks never interleave.
                FileHandle.standardOutput.write(Data("committed \(tokens.sessionId)\n".utf8))
            }
        }
    }
}
