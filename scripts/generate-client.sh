#!/usr/bin/env bash
# Regenerates GatehouseClient's typed HTTP layer (Sources/GatehouseClient/Generated/) and the server side of the
# non-decision routes (Sources/PolicyServerAPI/Generated/, its own configuration lists the operations) from
# docs/openapi.yaml with swift-openapi-generator 1.14.3, built from the small package in scripts/openapi-generator/ so
# the main package never depends on the generator. Run it after every change to docs/openapi.yaml and commit what it
# writes: GatehouseClientTests and PolicyServerTests fail while the committed code is older than the spec
# (openapi.yaml.sha256). GATEHOUSE_OPENAPI_GENERATOR=PATH uses a generator binary already built.
#
#   scripts/generate-client.sh           regenerate
#   scripts/generate-client.sh --check   exit 1 when the committed code differs from what the generator writes
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
generator_package=scripts/openapi-generator
# Each output folder and the configuration that writes it.
outputs=(
    "Sources/GatehouseClient/Generated:openapi-generator-config.yaml"
    "Sources/PolicyServerAPI/Generated:openapi-server-config.yaml"
)

if [ -n "${GATEHOUSE_OPENAPI_GENERATOR:-}" ]; then
    bin=$GATEHOUSE_OPENAPI_GENERATOR
else
    swift build --package-path "$generator_package" --product swift-openapi-generator >&2
    bin="$(swift build --package-path "$generator_package" --show-bin-path)/swift-openapi-generator"
fi

# The server's generated decoder is never handed a body or a query (GeneratedRouteTransport in PolicyServer: the
# controllers' hand-written readers read them, with today's limits, refusals and details), so the server side is
# generated from the spec with every request body and query parameter optional: a `required: true` right under
# `requestBody:` or `in: query`. The spec itself stays as it is (the client's code, the schemathesis run and the tests
# read it); the copy is written to a temporary file, never committed.
server_spec() {  # server_spec OUT
    awk '{
        if (previous ~ /^ *(requestBody:|in: query)$/ && $0 ~ /^ *required: true$/) sub(/true$/, "false")
        print; previous = $0
    }' docs/openapi.yaml >"$1"
}

generate() {  # generate CONFIG DIR
    spec=docs/openapi.yaml
    if [ "$1" = openapi-server-config.yaml ]; then
        spec_dir=$(mktemp -d)  # a folder, so the copy keeps the .yaml ending on macOS's mktemp too
        spec=$spec_dir/openapi.yaml
        server_spec "$spec"
    fi
    "$bin" generate --config "$generator_package/$1" --output-directory "$2" "$spec" >&2
    if [ "$spec" != docs/openapi.yaml ]; then rm -rf "$spec_dir"; fi
    # The spec's digest, so a test can tell the committed code was generated from the spec as it is now.
    sha256sum docs/openapi.yaml | cut -d' ' -f1 >"$2/openapi.yaml.sha256"
}

stale=0
for pair in "${outputs[@]}"; do
    out=${pair%%:*}
    config=${pair#*:}
    if [ "${1:-}" = "--check" ]; then
        tmp=$(mktemp -d)
        generate "$config" "$tmp"
        if ! diff -r "$out" "$tmp" >&2; then
            echo "$out is stale: run scripts/generate-client.sh" >&2
            stale=1
        else
            echo "$out is up to date" >&2
        fi
        rm -rf "$tmp"
    else
        mkdir -p "$out"
        generate "$config" "$root/$out"
        echo "wrote $out" >&2
    fi
done
exit $stale
