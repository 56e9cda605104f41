public import Foundation
public import GatehouseEngine
internal import OpenAPIRuntime

/// A decision the device made from its policy bundle, and which policy version made it.
public struct LocalDecision: Sendable, Hashable {
    /// The engine's decision.
    public let decision: Decision
    /// The version hash of the policy that decided: the server's `Gatehouse-Policy` for the same set.
    public let policyHash: String
    /// The bundle's revision.
    public let revision: UInt64
}

/// What one bundle refresh did.
public enum PolicyBundleRefresh: Sendable, Hashable {
    /// A new bundle verified, compiled and swapped in.
    case updated(BundleManifest)
    /// The server answered 304: the bundle held is the current one.
    case unchanged
}

extension GatehouseClient {
    /// Decides `request` from the policy bundle held on the device, with no network: for the UI only (show a
    /// button, an upgrade prompt, a limit banner). Anything that changes data or spends money is the server's to
    /// decide; it decides again whatever the device showed. nil when no bundle is held yet.
    ///
    /// The device knows its subject from `me()` (tier, app roles); the request carries it as the server's would.
    public nonisolated func decideLocally(_ request: Request) -> LocalDecision? {
        guard let current = policyBundles?.current else { return nil }
        return LocalDecision(decision: current.engine.decide(request), policyHash: current.manifest.policyHash, revision: current.manifest.revision)
    }

    /// Fetches `GET /v1/bundle` with `If-None-Match` naming the bundle held (its ETag is the SHA-256 of its bytes, so
    /// it survives a relaunch), and installs a new one through the store: verified against the pinned key, never a
    /// downgrade. A bundle the store refuses leaves the held one deciding and throws `bundle_refused`.
    @discardableResult
    public func refreshPolicyBundle() async throws(GatehouseClientError) -> PolicyBundleRefresh {
        guard let store = policyBundles else {
            throw GatehouseClientError(code: "bundle_not_configured", detail: "the client was made without a PolicyBundleStore")
        }
        let held = store.current.map { PolicyBundle.entityTag(of: $0.bytes) }
        let output: Operations.GetBundle.Output
        do { output = try await api.getBundle(headers: .init(ifNoneMatch: held)) } catch { throw clientError(error) }
        switch output {
        case .notModified: return .unchanged
        case .ok(let ok):
            let bytes: [UInt8]
            do {
                let body = try ok.body.applicationVnd_gatehouse_bundle
                bytes = Array(try await Data(collecting: body, upTo: 64 * 1024 * 1024))
            } catch { throw clientError(error) }
            // A URL cache between the client and the server may answer its own revalidation with the cached 200.
            if let held, PolicyBundle.entityTag(of: bytes) == held { return .unchanged }
            do {
                let installed = try store.install(bytes).manifest
                revisionFeeds.send(store.current?.manifest.revision ?? installed.revision)
                return .updated(installed)
            } catch {
                throw GatehouseClientError(code: "bundle_refused", detail: error.description)
            }
        default:
            throw GatehouseClientError(code: GatehouseClientError.unexpectedResponse, detail: "GET /v1/bundle answered \(output)")
        }
    }

    /// Refreshes the bundle now and then every `interval` until `stopPolicyBundleRefresh()` (or the client goes
    /// away). Failures (offline, a refused bundle) keep the held bundle and are retried at the next tick.
    public func startPolicyBundleRefresh(every interval: Duration = .seconds(60)) {
        bundleRefresh?.cancel()
        bundleRefresh = Task { [weak self] in
            while !Task.isCancelled {
                _ = try? await self?.refreshPolicyBundle()
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// Stops the scheduled refresh.
    public func stopPolicyBundleRefresh() {
        bundleRefresh?.cancel()
        bundleRefresh = nil
    }
}
