import HTTPTypes

extension HTTPFields {
    /// The value of the field `name`, as `self[name]` gives it (the values of repeated fields joined), without its
    /// cost on the common case: `self[name]` builds a lazy filter and joins it for every lookup, about 4,000
    /// instructions each, and a decision request looked up four headers (docs/performance.md, issue 41).
    func value(_ name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            guard found == nil else { return self[name] }  // repeated: the joined form, exactly as before
            found = field.value
        }
        return found
    }
}
