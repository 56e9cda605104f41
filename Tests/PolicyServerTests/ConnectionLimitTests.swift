import Foundation
import Hummingbird
import HummingbirdTesting
import PolicyServer
import Testing
import GatehouseTestSupport

/// N3 (issue 36): one client cannot hold every connection. Connections are capped per client (the /64-aware key the
/// rate limits use), and a connection that sends nothing is closed at the read timeout, not the idle timeout.
@Suite(.startsServers) struct ConnectionLimitTests {
    @Test func oneClientHoldingConnectionsLeavesRoomForOthers() async throws {
        let t = try TestServer(configure: fromEnvironment(["GATEHOUSE_MAX_CONNECTIONS": "10", "GATEHOUSE_MAX_CONNECTIONS_PER_CLIENT": "3"]))
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let (held, other) = try await onThread { () throws -> (Int, RawConnection.Answer?) in
                // One address opens as many connections as the server takes in all, and keeps them idle.
                let idle = try (0..<10).map { _ in try RawConnection(port: port) }
                for connection in idle { _ = connection.readable(within: 100) }
                let open = idle.filter { !$0.closedByPeer(within: 0.5) }.count
                // Another client (another loopback address) is still served.
                let other = try RawConnection.exchange(port: port, "GET", "/healthz", seconds: 10, source: "127.0.0.2")
                _ = idle
                return (open, other)
            }
            #expect(held <= 3, "one client holds \(held) connections")
            #expect(other?.status == 200)
        }
    }

    @Test func aConnectionThatSendsNothingIsClosedAtTheReadTimeout() async throws {
        let t = try TestServer {
            $0.readTimeout = .milliseconds(500)
            $0.idleTimeout = .seconds(300)
        }
        try await t.app.test(.live) { client in
            let port = try #require(client.port)
            let closed = try await onThread { () throws -> Bool in
                let silent = try RawConnection(port: port)
                return silent.closedByPeer(within: 30)
            }
            #expect(closed, "a silent connection stayed open past the read timeout")
            // A client that does send is served as before.
            let quick = try await onThread { try RawConnection.exchange(port: port, "GET", "/healthz", seconds: 10) }
            #expect(quick?.status == 200)
        }
    }
}
