#!/usr/bin/env bash
# Builds libFuzzer targets with AddressSanitizer and runs them for a bounded time.
#
#   scripts/fuzz.sh TARGET SECONDS [more libFuzzer flags]   one campaign: large hostile inputs once, then fuzzing
#   scripts/fuzz.sh --smoke [SECONDS]                       every target built, then run SECONDS (5) on its seeds
#   scripts/fuzz.sh --list                                  the targets
#
#   TARGET: policy-compile (bytes -> PolicyCompiler.compile -> decide) | expression (parser + checker + evaluation)
#           | request (bytes -> request JSON -> decide/explain on the shipped sets, written back and read again)
#           | bundle (signed bundle reader: plain bytes, fields of a signed bundle, tampered bundles)
#           | bundle-roundtrip (build -> parse -> the same files and hashes) | app-store-jws | apple-identity-token
#           | device-challenge | cursor (resource list and operator log cursors) | postgres-url | yaml-safety
#           | session-device (the Gatehouse-Device header's check and the User-Agent's reduction)
#           | bundle-events (GatehouseClient's event stream parser) | replay-records (policy replay's JSONL reader)
#           | plan-sql (generated set and world -> plan -> SQL on SQLite == decide)
#           docs/testing.md says what each one checks.
#
# The fuzz targets exist only when GATEHOUSE_FUZZ=1 (see Package.swift) and build in .build-fuzz, apart
# from the main build. Seeds come from fuzz/seeds/TARGET (committed, small) and from hostile inputs
# generated here (large, not committed); the growing corpus, crash, timeout and out-of-memory inputs and
# the log go to fuzz/out/TARGET (ignored by git). A finding makes the script exit non-zero; repeat it
# with: .build-fuzz/debug/gatehouse-fuzz TARGET fuzz/out/TARGET/crashes/FILE (one binary holds every target, so one
# build serves the smoke step and every campaign).
set -euo pipefail

targets=(policy-compile expression request bundle bundle-roundtrip app-store-jws apple-identity-token device-challenge cursor
         postgres-url session-device yaml-safety bundle-events replay-records plan-sql)
usage="usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags] | --smoke [SECONDS] | --list; TARGET: ${targets[*]}"
target=${1:?$usage}
root=$(cd "$(dirname "$0")/.." && pwd)
scratch="$root/.build-fuzz"

# Builds gatehouse-fuzz, the one binary of every target, and prints its path. (The build-stamp plugin's tool fails to
# link under -sanitize=fuzzer, as it has no fuzz entry point; SwiftPM reports that and carries on, so only the
# product's own outcome counts.)
# FUZZ_CONFIG=release builds it optimised (still with ASan) for long campaigns: several times the executions a second.
build_fuzzers() {
    local config=${FUZZ_CONFIG:-debug}
    local build=(swift build --package-path "$root" --scratch-path "$scratch" -c "$config" --product gatehouse-fuzz -Xswiftc -sanitize=fuzzer,address)
    GATEHOUSE_FUZZ=1 "${build[@]}" >&2
    echo "$scratch/$config/gatehouse-fuzz"
}

# fuzz/dicts/TARGET.dict, where the target has one: the tokens of its format (a request's keys, YAML's indicators, the
# condition language's operators), which libFuzzer splices into inputs instead of finding them byte by byte. A malformed
# dictionary stops libFuzzer at start-up, so the smoke step checks every one.
dictionary() {
    dict=()
    if [ -f "$root/fuzz/dicts/$1.dict" ]; then dict=(-dict="$root/fuzz/dicts/$1.dict"); fi
}

export SWIFT_BACKTRACE=enable=no  # let libFuzzer and ASan report; the Swift backtracer trips ASan
export LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp:print_suppressions=0"

case "$target" in
  --list) printf '%s\n' "${targets[@]}"; exit 0 ;;
  --smoke)
    # Every target built and run a few seconds on its committed seeds (into a throwaway corpus), so a target that
    # stops building or trips on its own seeds fails CI (libFuzzer runs every seed before it mutates any).
    seconds=${2:-5}
    started=$(date +%s)
    if ! binary=$(build_fuzzers); then
        echo "fuzz smoke: gatehouse-fuzz did not build" >&2
        exit 1
    fi
    echo "fuzz smoke: built in $(( $(date +%s) - started )) s"
    failed=()
    for t in "${targets[@]}"; do
        corpus=$(mktemp -d)
        dictionary "$t"
        if "$binary" "$t" "$corpus" "$root/fuzz/seeds/$t" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -max_len=4096 \
            "${dict[@]}" -artifact_prefix="$corpus/" > "$corpus.log" 2>&1; then
            echo "fuzz smoke $t: $(grep -Eo 'DONE +cov: [0-9]+' "$corpus.log" | grep -Eo '[0-9]+$' || echo '?') edges, $(grep -Eo '^#[0-9]+' "$corpus.log" | tail -1) runs"
        else
            failed+=("$t")
            grep -E "FINDING|ERROR|SUMMARY|Fatal error|Test unit written" "$corpus.log" | head -20 >&2 || true
            # Keep what failed (the throwaway corpus goes below): replay it with .build-fuzz/debug/gatehouse-fuzz $t FILE.
            kept="$root/fuzz/out/$t/crashes"
            mkdir -p "$kept"
            for found in "$corpus"/crash-* "$corpus"/timeout-* "$corpus"/oom-* "$corpus"/leak-*; do
                [ -e "$found" ] && cp "$found" "$kept/" && echo "kept $kept/$(basename "$found")" >&2
            done
        fi
        rm -rf "$corpus" "$corpus.log"
    done
    echo "fuzz smoke: ${#targets[@]} targets in $(( $(date +%s) - started )) s; failed: ${failed[*]:-none}"
    [ "${#failed[@]}" -eq 0 ]
    exit
    ;;
esac

case " ${targets[*]} " in
  *" $target "*) ;;
  *) echo "unknown target '$target': ${targets[*]}" >&2; exit 64 ;;
esac
seconds=${2:-60}
shift $(( $# >= 2 ? 2 : 1 ))
out="$root/fuzz/out/$target"
mkdir -p "$out/corpus" "$out/crashes" "$out/generated-seeds"
binary=$(build_fuzzers)

# Hostile inputs too big to commit: a huge scalar, deep nesting, many nodes, a long condition.
python3 - "$target" "$out/generated-seeds" <<'PY'
import sys, os
target, folder = sys.argv[1], sys.argv[2]
def put(name, text):
    with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
        f.write(text)
if target == "policy-compile":
    put("huge-scalar.yaml", "resources: {app: {actions: {a: {messages: {default_deny: '" + "x" * 300_000 + "'}}}}}\n")
    put("deep-block.yaml", "".join("  " * i + f"k{i}:\n" for i in range(400)))
    put("deep-flow.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n")
    put("many-nodes.yaml", "resources: {app: {actions: {" + ", ".join(f"a{i}: {{}}" for i in range(30_000)) + "}}}\n")
    put("many-rules.yaml", "resources: {app: {actions: {a: {}}}}\nrules:\n" + "".join(
        f"  - {{name: r{i}, effect: {'deny' if i % 2 else 'allow'}, actions: [a], when: 'resource.usage.n{i} > {i}'}}\n" for i in range(3000)))
    put("alias-bomb.yaml", "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(f"{chr(98+i)}: &{chr(98+i)} [" + ",".join([f"*{chr(97+i)}"] * 9) + "]\n" for i in range(8)))
elif target == "request":
    put("deep-array.json", '{"subject":{"attributes":{"x":' + "[" * 100_000 + "]" * 100_000 + '}},"action":"a","resource":{"type":"app"}}')
    put("many-members.json", '{"action":"view","resource":{"type":"project","members":{' + ",".join(f'"u{i}":"viewer"' for i in range(50_000)) + '}}}')
    put("huge-string.json", '{"action":"' + "x" * 500_000 + '","resource":{"type":"app"}}')
    put("over-size-cap.json", '{"action":"' + "x" * (2 << 20) + '","resource":{"type":"app"}}')
    put("deep-object.json", '{"action":"a","resource":{"type":"app","attributes":' + '{"k":' * 50_000 + "1" + "}" * 50_000 + "}}")
elif target == "expression":
    put("deep-parens.txt", "(" * 3000 + "true" + ")" * 3000)
    put("long-or.txt", " || ".join(["subject.signedIn"] * 2000))
    put("deep-index.txt", "resource.attributes.matrix" + "[0]" * 2000 + " == 1")
    put("deep-unary.txt", "!" * 5000 + "true")
elif target == "yaml-safety":  # the first byte picks the default limits (2)
    put("huge-scalar.yaml", "\x02resources: {a: '" + "x" * 300_000 + "'}\n")
    put("deep-flow.yaml", "\x02a: " + "[" * 5000 + "]" * 5000 + "\n")
    put("deep-block.yaml", "\x02" + "".join("  " * i + f"k{i}:\n" for i in range(400)))
    put("alias-bomb.yaml", "\x02a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(f"{chr(98+i)}: &{chr(98+i)} [" + ",".join([f"*{chr(97+i)}"] * 9) + "]\n" for i in range(8)))
    put("over-limit.yaml", "\x02a: '" + "x" * (1 << 20) + "'\n")
elif target == "bundle-events":  # no cuts (first byte 0), then the stream
    put("long-line.txt", "\x00data: " + "x" * 70_000 + "\n\n")
    put("many-events.txt", "\x00" + "event: bundle\ndata: {}\n\n" * 20_000)
    put("crlf-storm.txt", "\x00" + "\r\n" * 100_000)
elif target == "replay-records":
    put("many-lines.jsonl", '{"effect":"allow","reason":"allowed","policyHash":"x","request":{"action":"view","resource":{"type":"project"}}}\n' * 5_000)
    put("deep-request.jsonl", '{"effect":"deny","reason":"default_deny","policyHash":"x","request":' + '{"a":' * 50_000 + "1" + "}" * 50_000 + "}\n")
elif target == "session-device":  # both (first byte 2): a long name, and a User-Agent of many words and parentheses
    put("long-agent.txt", "\x02" + "x" * 100 + "\x00" + " ".join(["(a" * 50, "Mozilla/5.0"] + ["P%d/1.0" % i for i in range(20_000)]))
elif target == "postgres-url":
    put("long-url.txt", "\x00postgres://u:" + "p" * 200_000 + "@h/db?" + "&".join(f"schema=s{i}" for i in range(5_000)))
elif target in ("app-store-jws", "apple-identity-token"):
    put("too-long.txt", "\x00" + "A" * 200_000 + "." + "B" * 200_000 + "." + "C" * 1000)
elif target == "cursor":
    put("long-cursor.txt", "\x00" + "A" * 100_000)
PY

log="$out/fuzz-$(date +%Y%m%d-%H%M%S).log"
limits=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -artifact_prefix="$out/crashes/")

# The large hostile inputs once each, at full size: they must finish within memory and 30 s (a debug,
# ASan build compiles a 1 MiB policy file in about ten seconds; the main run's limit is 10 s).
echo "replaying $(ls "$out/generated-seeds" | wc -l) large hostile inputs; log: $log"
set +e
replay=0
if compgen -G "$out/generated-seeds/*" > /dev/null; then
    "$binary" "$target" "${limits[@]}" -timeout=30 "$out"/generated-seeds/* > "$log" 2>&1
    replay=$?
fi

# Then the fuzzing proper, on inputs of at most FUZZ_MAX_LEN bytes (small inputs run far faster).
echo "fuzzing $target for $seconds s"
dictionary "$target"
"$binary" "$target" "$out/corpus" "$root/fuzz/seeds/$target" "${limits[@]}" -max_total_time="$seconds" \
  -max_len="${FUZZ_MAX_LEN:-16384}" "${dict[@]}" -print_final_stats=1 "$@" >> "$log" 2>&1
status=$?
set -e
grep -E "INITED|DONE|ERROR|SUMMARY|Test unit written|stat::" "$log" || true
echo "replay exit status $replay, fuzzing exit status $status; findings: $(ls "$out/crashes" | wc -l) file(s) in $out/crashes"
[ "$replay" -eq 0 ] && [ "$status" -eq 0 ]
