import Foundation
import Gatehouse
import Logging
import ServiceLifecycle

/// The housekeeping `policy serve` runs every `interval`: `purgeExpired` (nonces, challenges, share codes, sessions,
/// stale guess counters) and the expiry of audit and decision log rows older than the retention. Every replica may
/// run it: both steps are idempotent. Runs, failures and rows deleted are counted in `/metrics`.
public struct MaintenanceService: Service {
    let identity: IdentityService
    let interval: Duration
    let retention: TimeInterval
    let metrics: ServerMetrics
    let logger: Logger

    public init(identity: IdentityService, interval: Duration, retentionDays: Int, metrics: ServerMetrics, logger: Logger) {
        self.identity = identity
        self.interval = interval
        self.retention = TimeInterval(retentionDays) * 86400
        self.metrics = metrics
        self.logger = logger
    }

    /// Runs until cancelled or, inside a service group, until graceful shutdown begins.
    public func run() async throws {
        let (interval, pass) = (self.interval, self.runOnce)
        // The sleep ends at graceful shutdown too: a service group waits for every service to return.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                await pass()
            }
        }
    }

    /// One pass: purge, then log expiry; a failure is counted and logged (its type only) and the next pass tries again.
    public func runOnce() async {
        do {
            let purged = try await identity.purgeExpired()
            let expired = try await identity.expireLogs(olderThan: retention)
            metrics.maintained(purged: purged, expiredLogRows: expired.audit + expired.decisions)
        } catch {
            metrics.maintenanceFailed()
            logger.warning("maintenance pass failed", metadata: ["error.type": "\(type(of: error))"])
        }
    }
}
