// The library apps import: the decision contract's types, the compiler that loads policy sets, and the engine.
@_exported import PolicyCompiler
@_exported import PolicyEngine
@_exported import PolicyModel
