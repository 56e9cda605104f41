import Foundation
import Gatehouse
import ServiceLifecycle
import UnixSignals

/// Watches the policy folder (and, when asked, `SIGHUP`) and reloads once the folder has stopped changing.
///
/// Polling, not inotify: a look is one `stat` per policy file, and it sees in-place writes, renames
/// over a file and files that come and go alike. A change is read only after the folder looked the
/// same for `settle`, so a half-written save is not compiled.
public struct PolicyWatcher: Service {
    public let reloader: PolicyReloader
    public let interval: Duration
    public let settle: Duration
    public let reloadOnHangup: Bool

    /// Runs until cancelled or, inside a service group, until graceful shutdown begins.
    public func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await watch() }
            if reloadOnHangup {
                group.addTask {
                    for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() { await reloader.reload() }
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    private func watch() async throws {
        let directory = reloader.directory
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try await Task.sleep(for: interval)
            // What the last load read (taken before it read), so an edit made while it ran is seen next.
            var last = FolderFingerprint.of(directory)
            if last == reloader.lastRead { continue }
            var quietSince = ContinuousClock.now
            while ContinuousClock.now - quietSince < settle, !Task.isShuttingDownGracefully {
                try await Task.sleep(for: interval)
                let look = FolderFingerprint.of(directory)
                if look != last {
                    last = look
                    quietSince = ContinuousClock.now
                }
            }
            await reloader.reload()
        }
    }
}

extension PolicyWatcher {
    /// A watcher of `server`'s policy folder with the timing its settings give: a look every `watchInterval`, and a
    /// change read once the folder has looked the same for `settleTime`.
    public init(_ server: GatehouseServer, reloadOnHangup: Bool) {
        self.init(
            reloader: server.reloader, interval: server.settings.watchInterval, settle: server.settings.settleTime, reloadOnHangup: reloadOnHangup)
    }
}
