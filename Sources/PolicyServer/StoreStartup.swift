import Foundation
import IdentityPostgres
import Logging
import ServiceLifecycle

/// Runs `app` once the identity store is ready: PostgreSQL is migrated first, which needs the pool's
/// service (started before this one in the same `ServiceGroup`) to run. SQLite is ready already.
public struct ServingWhenStoreIsReady: Service {
    let store: OpenedIdentityStore
    let app: any Service
    let timeout: Duration

    /// The store did not become ready (unreachable, refused, or a migration failed).
    public struct NotReady: Error, CustomStringConvertible {
        public var description: String
    }

    public init(store: OpenedIdentityStore, app: any Service, timeout: Duration = .seconds(30)) {
        self.store = store
        self.app = app
        self.timeout = timeout
    }

    public func run() async throws {
        let store = self.store
        let timeout = self.timeout
        do {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await store.prepare()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return false
                }
                let prepared = try await group.next() ?? false
                group.cancelAll()
                guard prepared else { throw NotReady(description: "the database did not answer within \(timeout)") }
            }
        } catch let error as NotReady {
            throw error
        } catch {
            throw NotReady(description: "\(error)")
        }
        try await app.run()
    }

    /// The services `policy serve` runs, in start order: the store's pool (if any), then `app`.
    /// A `ServiceGroup` stops them in reverse order, so the pool closes after the last request.
    public static func services(store: OpenedIdentityStore, app: any Service) -> [any Service] {
        guard let pool = store.service else { return [app] }
        return [pool, ServingWhenStoreIsReady(store: store, app: app)]
    }
}
