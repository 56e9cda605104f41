#!/usr/bin/env bash
# Runs CI (.ci/run) from a fresh clone of this repository on a machine made slow or busy on purpose, to show the
# suite passes there too (docs/testing.md, "On a slow or busy machine"):
#
#   scripts/ci-under-load.sh one-core     # pinned to one processor (taskset -c 0): a machine half as fast
#   scripts/ci-under-load.sh hog          # a busy loop on every processor for the whole run
#   scripts/ci-under-load.sh both         # one-core, then hog
#
# Options (environment):
#   REVISION=<rev>        what to clone (default HEAD of this repository)
#   KEEP=1                keep the clone (its path is printed) instead of removing it
#   TESTS_ONLY=1          reuse this tree's build: run `swift test` under the load in this tree instead of a fresh clone's
#                         .ci/run (quicker, for iterating on a load-sensitive test; the build itself is not under test)
#
# The exit status is the first failing run's; each run's log is written to $TMPDIR/ci-under-load.<mode>.log.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
mode="${1:-both}"
revision="${REVISION:-HEAD}"
export PATH="/opt/swift/usr/bin:$PATH"

case "$mode" in
    one-core | hog) modes=("$mode") ;;
    both) modes=(one-core hog) ;;
    *)
        echo "usage: $0 one-core|hog|both" >&2
        exit 64
        ;;
esac

hogs=()
stop_hogs() {
    for pid in "${hogs[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null; done
    hogs=()
}
trap stop_hogs EXIT

run_one() {
    local mode=$1 log="${TMPDIR:-/tmp}/ci-under-load.$1.log" dir status start
    local command=(bash .ci/run)
    if [ -n "${TESTS_ONLY:-}" ]; then
        dir=$repo
        command=(swift test)
    else
        dir=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-ci-under-load.XXXXXX")
        git clone -q "$repo" "$dir/gatehouse" && git -C "$dir/gatehouse" checkout -q "$revision" || return 1
        dir="$dir/gatehouse"
    fi
    local prefix=()
    case "$mode" in
        one-core) prefix=(taskset -c 0) ;;
        hog)
            for _ in $(seq "$(nproc)"); do
                (while :; do :; done) &
                hogs+=($!)
            done
            ;;
    esac
    echo "== $mode: ${prefix[*]:-} ${command[*]} in $dir (log: $log)"
    start=$(date +%s)
    (cd "$dir" && CI=true "${prefix[@]}" "${command[@]}") >"$log" 2>&1 </dev/null
    status=$?
    stop_hogs
    echo "== $mode: exit $status after $(($(date +%s) - start)) s"
    grep -E "Test run with .* (passed|failed)|tests? (passed|failed)|error:" "$log" | tail -5
    if [ -z "${TESTS_ONLY:-}" ] && [ -z "${KEEP:-}" ]; then
        rm -rf "$(dirname "$dir")"
    fi
    return "$status"
}

overall=0
for m in "${modes[@]}"; do
    run_one "$m"
    status=$?
    if [ "$status" -ne 0 ] && [ "$overall" -eq 0 ]; then overall=$status; fi
done
exit "$overall"
