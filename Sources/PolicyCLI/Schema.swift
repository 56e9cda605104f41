import ArgumentParser
import PolicyCompiler

/// `policy schema`: the JSON Schema of a policy file, generated from the compiler's key tables.
struct Schema: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the JSON Schema of a policy file (what schemas/policy.schema.json holds).",
        discussion: """
            Generated from the same key tables the compiler checks with. For completion and checks while typing in an \
            editor with a YAML language server, start a policy file with:
              # yaml-language-server: $schema=../../schemas/policy.schema.json
            """)

    func run() {
        print(PolicySchema.document(), terminator: "")
    }
}
