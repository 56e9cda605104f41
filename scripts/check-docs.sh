#!/usr/bin/env bash
# Checks the library's documentation: every public symbol of PolicyModel, PolicyEngine, PolicyCompiler, Identity,
# Gatehouse, IdentityPostgres and GatehouseClient has a doc comment, and DocC builds their combined documentation (Gatehouse.docc's
# articles as the landing page) without a warning. The check is the DocumentationTests suite
# (Tests/GatehouseTests/DocumentationTests.swift), which every `swift test` runs too (so CI runs it through the
# README's test command); this script only runs that suite alone, and can write the archive to browse.
#
#   scripts/check-docs.sh             # build, then the two checks (1 to 2 minutes on a built tree)
#   scripts/check-docs.sh --archive   # also write the combined archive with the swift-docc-plugin
#
# Why combined documentation: `generate-documentation --target Gatehouse` documents only the symbols declared in
# Gatehouse itself, not the modules it re-exports with `@_exported import`, so an app developer would find no
# `CompiledPolicy` or `Request` there. `--enable-experimental-combined-documentation` builds one archive over
# several targets, with Gatehouse's catalog as the landing page and each module linked from it.
#
# Exit 0 clean; non-zero with the list of undocumented symbols or DocC's warnings.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

swift build --build-tests
swift test --skip-build --filter DocumentationTests

if [ "${1:-}" = --archive ]; then
    swift package --disable-sandbox generate-documentation \
        --target PolicyModel --target PolicyEngine --target PolicyCompiler --target Identity --target Gatehouse --target IdentityPostgres --target GatehouseClient \
        --enable-experimental-combined-documentation --warnings-as-errors
fi
