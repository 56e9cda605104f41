/// The deadlines the tests' servers keep: generous, so a test that asserts an exact outcome gets it on a slow or busy
/// machine. There a starved process passed the shipped deadlines (request 15 s, read 10 s, PostgreSQL pool 3 s)
/// for requests it had not yet looked at, and answered 503 `storage_unavailable` where the test expected 201.
///
/// The shipped deadlines are tested on their own, by the tests that set them with controlled stalls (FaultTests,
/// FindingsTests, DeploySettingsTests, ReplicaPressureTests, PressureTests), never by a test that happens to be slow.
public enum TestDeadlines {
    /// `--request-timeout`.
    public static let request: Duration = .seconds(300)
    /// `--read-timeout`.
    public static let read: Duration = .seconds(120)
    /// A PostgreSQL lease and a new connection (`pool_timeout`, `connect_timeout`).
    public static let postgresPool: Duration = .seconds(60)

    /// The same for a served process, as its variables (a test's own environment wins when merged over these).
    public static let environment = [
        "GATEHOUSE_REQUEST_TIMEOUT": "\(request.components.seconds)", "GATEHOUSE_READ_TIMEOUT": "\(read.components.seconds)",
    ]

    /// `url` with the generous pool and connect deadlines added, unless it names its own.
    public static func postgres(_ url: String) -> String {
        var url = url
        for (option, duration) in [("pool_timeout", postgresPool), ("connect_timeout", postgresPool)] where !url.contains(option + "=") {
            url += (url.contains("?") ? "&" : "?") + "\(option)=\(duration.components.seconds * 1000)"
        }
        return url
    }
}
