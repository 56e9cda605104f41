#!/usr/bin/env bash
# Regenerates GatehouseClient's typed HTTP layer (Sources/GatehouseClient/Generated/) from docs/openapi.yaml with
# swift-openapi-generator 1.14.3, built from the small package in scripts/openapi-generator/ so the main package never
# depends on the generator. Run it after every change to docs/openapi.yaml and commit what it writes:
# GatehouseClientTests fails while the committed code is older than the spec (openapi.yaml.sha256).
#
#   scripts/generate-client.sh           regenerate
#   scripts/generate-client.sh --check   exit 1 when the committed code differs from what the generator writes
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
generator_package=scripts/openapi-generator
out=Sources/GatehouseClient/Generated

swift build --package-path "$generator_package" --product swift-openapi-generator >&2
bin="$(swift build --package-path "$generator_package" --show-bin-path)/swift-openapi-generator"

generate() {
    "$bin" generate --config "$generator_package/openapi-generator-config.yaml" --output-directory "$1" docs/openapi.yaml >&2
    # The spec's digest, so a test can tell the committed code was generated from the spec as it is now.
    sha256sum docs/openapi.yaml | cut -d' ' -f1 >"$1/openapi.yaml.sha256"
}

if [ "${1:-}" = "--check" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    generate "$tmp"
    if ! diff -r "$out" "$tmp" >&2; then
        echo "Sources/GatehouseClient/Generated is stale: run scripts/generate-client.sh" >&2
        exit 1
    fi
    echo "Sources/GatehouseClient/Generated is up to date" >&2
else
    mkdir -p "$out"
    generate "$root/$out"
    echo "wrote $out" >&2
fi
