// The contract's types (Request, Decision, Subject, Resource, ProblemDetails, TokenPair) come with the client, so an
// app that imports GatehouseClient holds the same values the engine returns in-process.
@_exported public import PolicyModel
// The device's policy (`PolicyBundleStore`, `BundlePublicKey`, `Engine`) for `decideLocally`: signed bundles from
// `GET /v1/bundle`, verified and decided on the device (docs/bundles.md).
@_exported public import GatehouseEngine
