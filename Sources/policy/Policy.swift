import ArgumentParser
import PolicyCLI

/// The `policy` executable: the root command's async entry point (`policy serve` runs a server).
@main
extension PolicyCommand {}
