import Foundation
import FuzzSupport
import GRDB
import Identity
import PolicyCompiler
import PolicyEngine
import PolicyModel

/// The seeded generators of the engine's differential tests (PolicySetGenerator, RequestGenerator: linked here from
/// Tests/PolicyEngineTests/PolicySets, not copied) draw from the fuzzer's bytes, so their choices are coverage-guided.
typealias Rng = FuzzRandom

/// libFuzzer entry, differential: a generated policy set and world -> `plan` -> SQL (`IdentityService.listQuery`, the
/// store's own query over `IdentityService.planColumns`) run on an in-memory SQLite -> the ids must equal those `decide`
/// allows. The bytes drive the set generator, then the request generator, which makes a subject and up to 12 resources of
/// one type (owners, members and usage counters; attributes dropped, as the store keeps none and the plan reads them as
/// absent); every action of the type is listed and decided. A finding: a query that fails, a `not_listable` refusal that
/// names no field, or a list that differs from `decide`.
public func fuzzPlanSQL(_ raw: UnsafeRawBufferPointer) {
    var generator = PolicySetGenerator(rng: FuzzRandom(Array(raw)))
    let model = generator.make()
    var renderer = PolicySetRenderer(rng: generator.rng)
    let files = renderer.files(model, layout: .single)
    guard let policy = PolicyCompiler.compile(name: "generated", files: files).policy else { return }
    var requests = RequestGenerator(rng: renderer.rng, model: model)
    let first = requests.make()
    guard let type = model.resources.first(where: { $0.id == first.resource.type }) ?? model.resources.first else { return }
    var resources: [Resource] = []
    for index in 0..<(1 + requests.rng.below(12)) {
        var resource = requests.make().resource
        resource.type = type.id
        resource.id = "r\(index)"
        resource.attributes = [:]
        resources.append(resource)
    }
    World.load(resources)
    for action in type.actions.map(\.id) {
        let plan = policy.plan(subject: first.subject, action: action, resourceType: type.id, context: first.context)
        let allowed = resources.filter { resource in
            policy.decide(Request(subject: first.subject, action: action, resource: resource, context: first.context)).effect == .allow
        }.map { $0.id! }
        let listed: [String]
        do {
            if case .never = plan { listed = [] } else {
                let query = try IdentityService.listQuery(type: type.id, plan: plan, after: nil, limit: 1000, placeholders: .questionMarks)
                listed = try World.queue.read { db in try String.fetchAll(db, sql: query.sql, arguments: StatementArguments(query.bindings)) }
            }
        } catch let error as IdentityError where error.code == .notListable {
            // A plan reading something with no SQL form (an attribute, a subject part the columns lack): the store
            // answers not_listable, naming it.
            if error.field.isEmpty { finding("a plan that does not translate names no field: \(error)") }
            continue
        } catch {
            finding("the list's SQL failed: \(error)\nplan: \(plan.json.rendered(pretty: false))")
        }
        if Set(listed) != Set(allowed) || listed.count != Set(listed).count {
            finding("""
                the list and decide disagree for \(type.id)/\(action): SQL \(listed.sorted()), decide \(allowed.sorted())
                plan: \(plan.json.rendered(pretty: false))
                subject: \(Request(subject: first.subject, action: action, resource: Resource(type: type.id), context: first.context).json.rendered(pretty: false))
                resources: \(resources.map { Request(action: action, resource: $0).json.rendered(pretty: false) }.joined(separator: "\n"))
                policy:
                \(files.map { String(decoding: $0.bytes, as: UTF8.self) }.joined(separator: "\n---\n"))
                """)
        }
    }
}

/// The tables a list reads, as Gatehouse's store names them (resource, membership, usageCounter), in memory.
enum World {
    static let queue: DatabaseQueue = {
        let queue = try! DatabaseQueue()
        try! queue.write { db in
            try db.execute(sql: """
                CREATE TABLE resource (id TEXT PRIMARY KEY, type TEXT NOT NULL, ownerId TEXT);
                CREATE TABLE membership (
                    resourceId TEXT NOT NULL, userId TEXT NOT NULL, role TEXT NOT NULL,
                    resourceType TEXT, resourceOwnerId TEXT,  -- the resource's, as v22's triggers keep them in the store
                    PRIMARY KEY (resourceId, userId));
                CREATE TABLE usageCounter (resourceId TEXT NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY (resourceId, name));
                """)
        }
        return queue
    }()

    static func load(_ resources: [Resource]) {
        try! queue.write { db in
            try db.execute(sql: "DELETE FROM resource; DELETE FROM membership; DELETE FROM usageCounter;")
            for r in resources {
                try db.execute(sql: "INSERT INTO resource (id, type, ownerId) VALUES (?, ?, ?)", arguments: [r.id, r.type, r.ownerId])
                for (user, role) in r.members {
                    try db.execute(
                        sql: "INSERT INTO membership (resourceId, userId, role, resourceType, resourceOwnerId) VALUES (?, ?, ?, ?, ?)",
                        arguments: [r.id, user, role, r.type, r.ownerId])
                }
                for (name, value) in r.usage {
                    try db.execute(sql: "INSERT INTO usageCounter (resourceId, name, value) VALUES (?, ?, ?)", arguments: [r.id, name, value])
                }
            }
        }
    }
}
