import PolicyModel
import PolicySyntax
import Testing

/// Complex mapping keys (an explicit `? ` key, or a collection used as a key) are refused by the safety scan before Yams
/// composes anything: Yams' duplicate-key check compares such keys by walking them, and keys nested in keys made a
/// 983-byte file take more than five minutes (found by the `yaml-safety` fuzz target, 2026-11-29; the input is the seed
/// `found-complex-keys-hang.bin`). Policy files never need such keys.
@Suite struct YAMLComplexKeyTests {
    static func load(_ text: String) -> [Diagnostic] {
        YAMLLoader.load(bytes: Array(text.utf8), path: "keys.yaml").2
    }

    @Test(arguments: [
        ("? a\n: b\n", 1, 1),
        ("x:\n  ? [a, b]\n  : c\n", 2, 3),
        ("[a, b]: c\n", 1, 7),
        ("{a: b}: c\n", 1, 7),
        ("x: {[a]: b}\n", 1, 8),
        ("x: [{a: b}: c]\n", 1, 11),
        ("x: {? a : b}\n", 1, 5),
    ])
    func aComplexKeyIsRefusedWhereItIs(text: String, line: Int, column: Int) {
        let diagnostics = Self.load(text)
        #expect(diagnostics.contains { $0.kind == .yamlSyntax && $0.message.contains("complex mapping key") }, "\(diagnostics)")
        #expect(diagnostics.first?.location?.line == line && diagnostics.first?.location?.column == column, "\(diagnostics)")
    }

    @Test(arguments: [
        "actions: [a, b]\n",
        "x: {a: [1, 2], b: {c: d}}\n",
        "x:\n  - {a: b}\n  - [c]\n",
        "message: 'what? yes: [x]: y'\n",
        "when: \"a ? b : c\"\n",
        "a: b?c\n",
        "x: [a, b] # [c]: d\n",
        "message: see [docs]:here\n",
    ])
    func ordinaryKeysAndValuesStillLoad(text: String) {
        #expect(Self.load(text).isEmpty, "\(Self.load(text))")
    }

    @Test func theFuzzersFileIsRefusedNotComposed() {
        let diagnostics = Self.load(Self.found)
        #expect(diagnostics.contains { $0.message.contains("complex mapping key") })
    }

    static let found = "\naact:\n? - \n      ? ?        ? ?  ? ?       ? ? -   ? ?       ? ?        ? ?  ? ?       ? ? -   ? ?        ? ?  ? ?       ? ? -       ? ?  ? ?   t:\n? - \n      ? ?        ? ?  ? ?       ? ? -   ? ?       ? ?        ? ?  ? ?       ? ? -   ? ?        ?       ? ?     ? ? -    ? ? -       ? ?  ? ?   t:\n? - \n      ? ?       ? ?  ? ?     ? ? -    ? ? -       ? ?  ? ?   t:\n? - \n      ? ?        ? ?  ? ?       ? ?     ? ? -    ? ? -       ? ?  ? ?   t:\n? - \n      ? ?        ? ?  ? ?       ? ? -   ? ?    ? ?        ? ?  ? ?       ? ? -   ? ?        ? ?  ? ?       ? ? -       ? ?  ? ?   t:\n? - \n      ? ?        ? ?  ? ?       ? ? -   ? ?       ? ?        ? ?  ? ?       ? ? -   ? ?        ?       ? ?     ? ? -    ? ? -       ? ?  ? ?   t:\n? - \n      ? ?       ? ?  ? ?     ? ? -    ? ? -       ? ?  ? ?   t:\n? - \n      ? ?        ? ?  ? ?       ? ?     ? ? -    ? ? -       ? ?  ? ?   t:\n? - \n      ? ?        ? ?  ? ?       ? ? -   ? ?       ? ?        ? ?  ? -   ?  ? ? - p  aHHHHi\n"
}
