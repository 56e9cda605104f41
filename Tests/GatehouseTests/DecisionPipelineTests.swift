import Foundation
import Gatehouse
import Synchronization
import Testing

/// An observer that keeps what the pipeline told it.
final class RecordingObserver: DecisionObserver {
    let decisions = Mutex<[Reason]>([])
    let failures = Mutex(0)
    let cacheEvents = Mutex<[DecisionCacheEvent: Int]>([:])
    func decided(_ decision: Decision) { decisions.withLock { $0.append(decision.reason) } }
    func resolveFailed(_ error: any Error) { failures.withLock { $0 += 1 } }
    func cache(_ event: DecisionCacheEvent) { cacheEvents.withLock { $0[event, default: 0] += 1 } }
    func count(_ event: DecisionCacheEvent) -> Int { cacheEvents.withLock { $0[event] ?? 0 } }
}

/// The facade's one pipeline (resolve, decide, observe, record) and its one policy holder.
@Suite struct DecisionPipelineTests {
    static func facade(trust: Bool = false, log: DecisionLogMode = .off) throws -> (Facade, GatehouseService, RecordingObserver) {
        let f = try Facade(policySet: "research-crawler")
        let observer = RecordingObserver()
        let gate = GatehouseService(policy: f.gate.policy, identity: f.identity, decisionLog: log, trustCallerSubjects: trust, observer: observer)
        return (f, gate, observer)
    }

    /// Every decision the pipeline makes is told to the observer once: one request, each batch item, each action of a
    /// check, an explanation; the in-process `decide(token:)` too.
    @Test func theObserverHearsEveryDecisionOnce() async throws {
        let (f, gate, observer) = try Self.facade(trust: true)
        let policy = gate.policy
        let user = try await f.identity.signInAnonymously(source: .inProcess)
        let request = Request(subject: Subject(), action: "view", resource: Resource(type: "project", id: "p1"))
        let one = try await gate.decide(request, bearer: nil, by: policy)
        let viaToken = try await gate.decide(request, bearer: user.accessToken, by: policy)
        let batch = try await gate.decideBatch([.success(request), .success(request)], bearer: nil, by: policy)
        let checked = try await gate.check(CheckEnvelope(request: request, actions: ["view", "edit", "delete"]), bearer: nil, by: policy)
        let explained = try await gate.explain(request, bearer: nil, by: policy)
        let facadeCall = try await gate.decide(token: nil, action: "view", resource: Resource(type: "project", id: "p1"))
        let made = [one.reason, viaToken.reason] + batch.compactMap { try? $0.get().reason } + checked.map(\.decision.reason)
            + [explained.decision.reason, facadeCall.reason]
        #expect(observer.decisions.withLock { $0 } == made)
        #expect(made.count == 9)
    }

    /// A named subject is refused without trust, and with a bearer; a batch item naming one fails alone.
    @Test func namedSubjectsAreRefusedWhereTheyMayNotBe() async throws {
        let (f, gate, observer) = try Self.facade(trust: false)
        let named = Request(subject: Subject(id: "u1"), action: "view", resource: Resource(type: "project"))
        await #expect(throws: DecisionRequestError(.callerSubjectNotTrusted)) { try await gate.decide(named, bearer: nil, by: gate.policy) }
        let user = try await f.identity.signInAnonymously(source: .inProcess)
        await #expect(throws: DecisionRequestError(.subjectWithBearer)) { try await gate.decide(named, bearer: user.accessToken, by: gate.policy) }
        let answers = try await gate.decideBatch([.success(named)], bearer: user.accessToken, by: gate.policy)
        guard case .failure(let error) = answers[0] else { Issue.record("a named subject with a bearer was decided"); return }
        #expect(error.field == "requests[0].subject")
        #expect(observer.decisions.withLock { $0 }.isEmpty)
    }

    /// A store that fails is told to the observer and thrown on; nothing is decided.
    @Test func aFailedResolutionIsObservedAndThrown() async throws {
        let (f, gate, observer) = try Self.facade()
        let user = try await f.identity.signInAnonymously(source: .inProcess)
        try f.database.pool.close()
        let request = Request(subject: Subject(), action: "view", resource: Resource(type: "project", id: "p1"))
        await #expect(throws: (any Error).self) { try await gate.decide(request, bearer: user.accessToken, by: gate.policy) }
        #expect(observer.failures.withLock { $0 } == 1)
        #expect(observer.decisions.withLock { $0 }.isEmpty)
    }

    /// The policy and its version are swapped together: after a reload the active version names the active policy.
    @Test func thePolicyAndItsVersionAreOneHolder() throws {
        let (_, gate, _) = try Self.facade()
        #expect(gate.active.version.hash == gate.active.policy.contentHash)
        let before = gate.active.version.hash
        #expect(!gate.reload(directory: Facade.root.appendingPathComponent("policies/contacasal").path).contains { $0.severity == .error })
        let after = gate.active
        #expect(after.version.hash != before && after.version.hash == after.policy.contentHash && after.version.name == "contacasal")
        #expect(!after.version.files.isEmpty && !after.version.fingerprint.entries.isEmpty)
    }
}
