// The contract's types (Request, Decision, Subject, Resource, ProblemDetails, TokenPair) come with the client, so an
// app that imports GatehouseClient holds the same values the engine returns in-process.
@_exported public import PolicyModel
