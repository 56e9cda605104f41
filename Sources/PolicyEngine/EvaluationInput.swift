import Foundation
import PolicyModel

/// What a compiled condition can see: the request plus the facts the engine derived from it.
///
/// The engine fills this once per decision; conditions read it without string lookups where the
/// compiler could resolve the path ahead of time. `decide` lends the request it was given (no copy,
/// so no retain of its many strings and collections); an input made with `init(request:...)` owns a copy.
package struct EvaluationInput: @unchecked Sendable {
    // @unchecked: `pointer` points either into `owner`, which is immutable and kept alive by this value, or at a
    // request that `decide` borrows for a scope this value cannot leave (the borrowing initializer is internal).
    private let pointer: UnsafePointer<Request>
    private let owner: RequestCopy?

    package var request: Request {
        unsafeAddress { pointer }
    }
    /// `context.now`, or the clock's now when the request gave none.
    package let now: Date
    /// The tier the policy applies: the subject's own while signed in, known and unexpired, else the default.
    package let effectiveTier: String
    package let signedIn: Bool
    /// The subject's role on the resource: the owner role for the owner, the member role, or nil.
    package let resourceRole: String?

    package init(request: Request, now: Date, effectiveTier: String, signedIn: Bool, resourceRole: String?) {
        let copy = RequestCopy(request)
        self.owner = copy
        self.pointer = UnsafePointer(copy.pointer)
        self.now = now
        self.effectiveTier = effectiveTier
        self.signedIn = signedIn
        self.resourceRole = resourceRole
    }

    /// An input over a request the caller keeps alive and unchanged for as long as this value is used.
    init(borrowing pointer: UnsafePointer<Request>, now: Date, effectiveTier: String, signedIn: Bool, resourceRole: String?) {
        self.owner = nil
        self.pointer = pointer
        self.now = now
        self.effectiveTier = effectiveTier
        self.signedIn = signedIn
        self.resourceRole = resourceRole
    }
}

/// A request copied to the heap at a stable address, for inputs that own their request.
private final class RequestCopy: Sendable {
    nonisolated(unsafe) let pointer: UnsafeMutablePointer<Request>

    init(_ request: Request) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: request)
    }

    deinit {
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }
}
