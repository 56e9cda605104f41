import PolicyModel

/// `allow-wider-than-deny`: an allow rule written beside a deny rule matches every request the deny matches, and more.
///
/// Only adjacent (allow, deny) pairs in one file whose actions meet are compared: that is where an exception is
/// written next to its rule. The allow reaching past the deny is often a slip; one example request outside the deny
/// is given.
struct AllowWiderThanDeny: SpaceFinding {
    var code: DiagnosticCode { .allowWiderThanDeny }
    let allow: String
    /// The deny rule beside it.
    let deny: OtherRule
    /// Requests the allow matches and the deny does not.
    let allowOnly: Int
    /// One of them, described by its axes.
    let example: String?
    let at: SourceLocation

    var message: String {
        "allow rule '\(allow)' is wider than deny rule '\(deny.name)' beside it: it matches every request the deny matches "
            + "and \(allowOnly) more" + (example.map { ", e.g. \($0)" } ?? "")
    }
    var help: String? { "check that the allow is meant to reach past the deny's exception, or narrow it" }
    var notes: [(SourceLocation?, String)] { [(deny.location, "the deny rule")] }
}
