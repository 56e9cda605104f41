#!/usr/bin/env bash
# Builds one libFuzzer target with AddressSanitizer and runs it for a bounded time.
#
#   scripts/fuzz.sh TARGET SECONDS [more libFuzzer flags]
#   TARGET: policy-compile (bytes -> PolicyCompiler.compile -> decide) | expression (parser + checker + evaluation)
#           | request (bytes -> request JSON -> decide/explain on the shipped sets, written back and read again)
#
# The fuzz targets exist only when GATEHOUSE_FUZZ=1 (see Package.swift) and build in .build-fuzz, apart
# from the main build. Seeds come from fuzz/seeds/TARGET (committed, small) and from hostile inputs
# generated here (large, not committed); the growing corpus, crash, timeout and out-of-memory inputs and
# the log go to fuzz/out/TARGET (ignored by git). A finding makes the script exit non-zero; repeat it
# with: .build-fuzz/debug/fuzz-TARGET fuzz/out/TARGET/crashes/FILE
set -euo pipefail

target=${1:?usage: scripts/fuzz.sh policy-compile|expression|request SECONDS [libFuzzer flags]}
seconds=${2:-60}
shift $(( $# >= 2 ? 2 : 1 ))
case "$target" in
  policy-compile|expression|request) ;;
  *) echo "unknown target '$target': policy-compile, expression or request" >&2; exit 64 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
scratch="$root/.build-fuzz"
out="$root/fuzz/out/$target"
mkdir -p "$out/corpus" "$out/crashes" "$out/generated-seeds"

build=(swift build --package-path "$root" --scratch-path "$scratch" -c debug --product "fuzz-$target"
       -Xswiftc -sanitize=fuzzer,address)
GATEHOUSE_FUZZ=1 "${build[@]}"
binary="$(GATEHOUSE_FUZZ=1 "${build[@]}" --show-bin-path)/fuzz-$target"

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
else:
    put("deep-parens.txt", "(" * 3000 + "true" + ")" * 3000)
    put("long-or.txt", " || ".join(["subject.signedIn"] * 2000))
    put("deep-index.txt", "resource.attributes.matrix" + "[0]" * 2000 + " == 1")
    put("deep-unary.txt", "!" * 5000 + "true")
PY

export SWIFT_BACKTRACE=enable=no  # let libFuzzer and ASan report; the Swift backtracer trips ASan
export LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp:print_suppressions=0"
log="$out/fuzz-$(date +%Y%m%d-%H%M%S).log"
limits=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -artifact_prefix="$out/crashes/")

# The large hostile inputs once each, at full size: they must finish within memory and 30 s (a debug,
# ASan build compiles a 1 MiB policy file in about ten seconds; the main run's limit is 10 s).
echo "replaying $(ls "$out/generated-seeds" | wc -l) large hostile inputs; log: $log"
set +e
"$binary" "${limits[@]}" -timeout=30 "$out"/generated-seeds/* > "$log" 2>&1
replay=$?

# Then the fuzzing proper, on inputs of at most FUZZ_MAX_LEN bytes (small inputs run far faster).
echo "fuzzing $target for $seconds s"
"$binary" "$out/corpus" "$root/fuzz/seeds/$target" "${limits[@]}" -max_total_time="$seconds" \
  -max_len="${FUZZ_MAX_LEN:-16384}" -print_final_stats=1 "$@" >> "$log" 2>&1
status=$?
set -e
grep -E "INITED|DONE|ERROR|SUMMARY|Test unit written|stat::" "$log" || true
echo "replay exit status $replay, fuzzing exit status $status; findings: $(ls "$out/crashes" | wc -l) file(s) in $out/crashes"
[ "$replay" -eq 0 ] && [ "$status" -eq 0 ]
