import Foundation
import Gatehouse
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Identity
import Logging
import NIOCore
import NIOHTTP1
import PolicyEngine
import PolicyModel
import ServiceLifecycle
import Synchronization

/// Builds the application: the router on `settings.host:port` with read/idle timeouts, the policy watcher
/// as a service, graceful shutdown on SIGTERM/SIGINT. `onListening` gets the numeric address and real port.
public func buildApplication(
    _ server: GatehouseServer, watch: Bool = true, reloadOnHangup: Bool = false,
    onListening: @escaping @Sendable (String, Int) async -> Void = { _, _ in }
) -> some ApplicationProtocol {
    let settings = server.settings
    var services: [any Service] = [
        // First, so it stops last: after the HTTP server has answered its last request, what is queued is written.
        DecisionLogFlusher(recorder: server.service.recorder),
        MaintenanceService(
            identity: server.service.identity, interval: settings.maintenanceInterval, retentionDays: settings.retentionDays,
            metrics: server.metrics, logger: server.logger)
    ]
    if let events = server.bundleEvents {
        services.append(BundleHeartbeatService(events: events))
    }
    if watch {
        services.append(
            PolicyWatcher(server, reloadOnHangup: reloadOnHangup))
        if let shadow = server.service.shadow {
            services.append(ShadowWatcher(shadow: shadow, interval: settings.watchInterval, settle: settings.settleTime, logger: server.logger))
        }
    }
    let readTimeout = settings.readTimeout
    let metrics = server.metrics
    let connections = server.connections
    let trusted = settings.trustedProxies, ipv6Prefix = settings.ipv6PrefixLength
    // The peer as the rate limits key it; a trusted proxy's connections carry many clients and count in the total only.
    let clientKey: @Sendable (SocketAddress?) -> String? = { address in
        let peer = address?.ipAddress ?? "local"
        if let canonical = ForwardedClient.canonical(peer), trusted.contains(canonical) { return nil }
        return ForwardedClient.limitKey(peer, ipv6Prefix: ipv6Prefix)
    }
    let decideAhead = DecideAhead.road(server)
    var http = HTTP1Channel.Configuration(
        additionalChannelHandlers: [ConnectionCap(connections, clientKey: clientKey) { metrics.connectionRefused() }]
            + ReadDeadline.handlers(limit: readTimeout) { metrics.readTimedOut() } + DecideAhead.handlers(road: decideAhead))
    http.idleTimeout = .nanoseconds(Int64(settings.idleTimeout.components.seconds) * 1_000_000_000)
    return Application(
        router: buildRouter(server),
        server: .http1(configuration: http),
        configuration: ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: nil),
        services: services,
        onServerRunning: { channel in
            let address = channel.localAddress
            await onListening(address?.ipAddress ?? settings.host, address?.port ?? settings.port)
        },
        logger: server.logger)
}

/// Writes the decision records still queued when the server shuts down cleanly: waits for the graceful shutdown (the
/// HTTP server, started after it, stops first), then closes the recorder, which flushes.
struct DecisionLogFlusher: Service {
    let recorder: DecisionRecorder

    func run() async throws {
        try? await gracefulShutdown()
        await recorder.close()
    }
}

/// Reloads the shadow candidate when its folder changes, as `PolicyWatcher` does the live set: a change is compiled once
/// the folder has looked the same for `settle`; a candidate that does not compile is reported and the last good one
/// kept.
struct ShadowWatcher: Service {
    let shadow: ShadowEvaluator
    let interval: Duration
    let settle: Duration
    let logger: Logger

    func run() async throws {
        var seen = FolderFingerprint.of(shadow.directory)
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: interval)
            var last = FolderFingerprint.of(shadow.directory)
            if last == seen { continue }
            var quietSince = ContinuousClock.now
            while ContinuousClock.now - quietSince < settle, !Task.isShuttingDownGracefully {
                try? await Task.sleep(for: interval)
                let look = FolderFingerprint.of(shadow.directory)
                if look != last {
                    last = look
                    quietSince = ContinuousClock.now
                }
            }
            seen = last
            let errors = shadow.reload().filter { $0.severity == .error }
            if errors.isEmpty {
                logger.info("shadow policy reloaded", metadata: ["policy.hash": "\(shadow.candidate.policy?.contentHash ?? "")"])
            } else {
                logger.error("the shadow policy set does not compile; the last good candidate is kept", metadata: ["errors": "\(errors.count)"])
            }
        }
    }
}
