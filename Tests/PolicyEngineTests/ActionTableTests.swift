import PolicyModel
import Testing

@testable import PolicyEngine

/// `ActionTable.lookup` finds a pair whatever form its names' `String`s take: small strings (two words), a small type
/// with a long action (its own table), or either held in a native buffer (the table by bytes).
@Suite struct ActionTableTests {
    /// `text` in a native buffer, not a small string, however short.
    private func native(_ text: String) -> String {
        var built = String()
        built.reserveCapacity(32)
        built.append(text)
        return built
    }

    private func slot(_ table: ActionTable, _ type: String, _ action: String) -> Int? {
        if case .found(let slot) = table.lookup(type: type, action: action) { return slot }
        return nil
    }

    @Test func everyFormOfTheNamesFindsTheSameSlot() {
        let table = ActionTable([
            (type: "marketplace", action: "partner_management"), (type: "marketplace", action: "checkout"),
            (type: "a_resource_type_name", action: "send_source_metadata"), (type: "app", action: "view"),
            (type: "app", action: "a_twenty_four_byte_name_"), (type: "app", action: "an_action_name_of_thirty_bytes"),
        ])
        #expect(SmallName(native("checkout")) == nil)
        for (type, action, expected) in [
            ("marketplace", "partner_management", 0), ("marketplace", "checkout", 1), ("a_resource_type_name", "send_source_metadata", 2),
            ("app", "view", 3), ("app", "a_twenty_four_byte_name_", 4), ("app", "an_action_name_of_thirty_bytes", 5),
        ] {
            #expect(slot(table, type, action) == expected, "\(type) \(action)")
            #expect(slot(table, native(type), action) == expected, "native \(type) \(action)")
            #expect(slot(table, type, native(action)) == expected, "\(type) native \(action)")
            #expect(slot(table, native(type), native(action)) == expected, "native \(type) native \(action)")
        }
        #expect(slot(table, "marketplace", "partner_managemenX") == nil)
        #expect(slot(table, "marketplace", "send_source_metadata") == nil)
        #expect(slot(table, "app", "partner_management") == nil)
        #expect(slot(table, "marketplace", native("view")) == nil)
        // Names of 16 to 24 bytes compare by three overlapping words: a difference in each part, or in length, tells.
        for action in ["partner_managemenT", "Partner_management", "partner_mAnagement", "partner_managementx", "partner_managemen"] {
            #expect(slot(table, "marketplace", action) == nil, "\(action)")
        }
        #expect(slot(table, "app", "a_twenty_four_byte_nAme_") == nil)
        #expect(slot(table, "app", "an_action_name_Of_thirty_bytes") == nil)
        #expect(slot(table, "marketplace", "partner_managemént") == nil)
    }
}
