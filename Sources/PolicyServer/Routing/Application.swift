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
    }
    let readTimeout = settings.readTimeout
    let metrics = server.metrics
    let connections = server.connections
    var http = HTTP1Channel.Configuration(
        additionalChannelHandlers: [ConnectionCap(connections) { metrics.connectionRefused() }]
            + ReadDeadline.handlers(limit: readTimeout) { metrics.readTimedOut() })
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
