import Foundation
import FuzzSupport
import Gatehouse
import Identity

/// libFuzzer entry for the list cursors a client sends back: the resource list's (`ListCursor`, bound to a type and an
/// action) and the operator log's (`IdentityService.logCursorId`, the decisions and audit routes). The first byte picks
/// a mode:
/// - plain (0): the rest is a cursor, read for each of a few lists. A cursor one list accepts must be refused by every
///   other (never a page of another type or action), name a non-empty last id without a NUL, and make the same cursor
///   reading again; a log cursor accepted must stand for an id above zero that its own cursor reads back.
/// - made (1): the bytes choose a type, an action and a last id (and a log id); the cursor made of them must read back
///   to the same id for that list only.
/// Every refusal names the `cursor` field.
public func fuzzCursor(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    if input.byte() % 2 == 0 {
        let cursor = String(decoding: input.rest(), as: UTF8.self)
        read(cursor, lists: Lists.all)
        do {
            let id = try IdentityService.logCursorId(cursor)
            if id <= 0 { finding("a log cursor stands for the id \(id)") }
            if (try? IdentityService.logCursorId(IdentityService.logCursor(after: id))) != id { finding("a log cursor's id does not read back") }
        } catch {
            if error.field != "cursor" { finding("a log cursor refusal names \(error.field)") }
        }
        return
    }
    let type = input.pick(Lists.types + [input.string(max: 16)])
    let action = input.pick(Lists.actions + [input.string(max: 16)])
    let lastId = input.string(max: 64)
    let id = Int64(bitPattern: input.uint64())
    if id > 0, (try? IdentityService.logCursorId(IdentityService.logCursor(after: id))) != id { finding("the log cursor of \(id) does not read back") }
    // Bytes, not Foundation's String.contains, which on Linux misses a U+0000 (see `occurrences(of:in:)`).
    guard !type.utf8.contains(0), !action.utf8.contains(0), !lastId.utf8.contains(0), !lastId.isEmpty else { return }
    let cursor = ListCursor.make(lastId: lastId, type: type, action: action)
    let lists = [(type, action)] + Lists.all.filter { $0 != (type, action) }
    guard let read = read(cursor, lists: lists), read.list == (type, action), read.lastId == lastId else {
        finding("a cursor made for \(type)/\(action) after \(lastId) does not read back for that list alone")
    }
}

enum Lists {
    static let types = ["project", "source", "space", "projects", "Project", ""]
    static let actions = ["view", "edit", "delete", "view ", "*"]
    static let all: [(String, String)] = types.flatMap { t in actions.map { (t, $0) } }
}

/// Reads `cursor` for each list: at most one may accept it. Returns the list that did and the id it named.
@discardableResult
func read(_ cursor: String, lists: [(String, String)]) -> (list: (String, String), lastId: String)? {
    var found: (list: (String, String), lastId: String)?
    for (type, action) in lists {
        do {
            let lastId = try ListCursor.lastId(in: cursor, type: type, action: action)
            if let found { finding("one cursor reads for \(found.list) and for \((type, action))") }
            if lastId.isEmpty || lastId.utf8.contains(0) { finding("a cursor names the last id \(Array(lastId.utf8))") }
            let again = ListCursor.make(lastId: lastId, type: type, action: action)
            if (try? ListCursor.lastId(in: again, type: type, action: action)) != lastId { finding("a cursor's last id does not read back") }
            found = ((type, action), lastId)
        } catch {
            if error.field != "cursor" { finding("a cursor refusal names \(error.field)") }
        }
    }
    return found
}
