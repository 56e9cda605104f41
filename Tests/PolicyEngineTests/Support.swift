import GatehouseTestSupport

/// The seeded generator the generated policy sets and requests draw from.
typealias Rng = SeededRandom
