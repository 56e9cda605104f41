#!/usr/bin/env python3
"""Instructions per decision under callgrind, which counts instead of timing.

Allocations are counted by gatehouse-bench itself (malloc interposer), not here.

Usage (from Benchmarks/, after `swift build -c release --product gatehouse-bench`):
    scripts/callgrind-per-decision.py decide research-crawler [PASSES]
    scripts/callgrind-per-decision.py allow|deny|prepared|explain SET [PASSES]
    scripts/callgrind-per-decision.py plan SET [PASSES]    (one `plan` per request of the mix: instructions per call)
    scripts/callgrind-per-decision.py plan-ratio SET [PASSES]   (plan next to decide on the same mix)
    scripts/callgrind-per-decision.py handwritten|handwritten-interned|interned SET [PASSES]
    scripts/callgrind-per-decision.py ratio SET [PASSES]   (decide and interned against the hand-written baselines)
    scripts/callgrind-per-decision.py scaling 10000 [PASSES]

Runs `gatehouse-bench --profile KIND SET PASSES` under callgrind with collection switched on only inside
`CompiledPolicy.decide` (or `explain`, or `plan`, whose own `decide` for a `never` plan is counted as part of it), so loading and compiling are not counted, and divides by the decisions
made. SWIFT_DETERMINISTIC_HASHING=1 makes Dictionary layouts, and so the counts, repeat from run to run.
"""
import os, re, subprocess, sys, tempfile
import callgrind_common

BENCH = os.environ.get("GATEHOUSE_BENCH", ".build/release/gatehouse-bench")


def stripped_copy(tmp):
    """The runner copied without debug info (callgrind_common.stripped_copy)."""
    return callgrind_common.stripped_copy(tmp, BENCH)


# The entry symbols collected per kind: explain, the hand-written baselines, or decide (every public form).
PATTERNS = {
    "explain": r"CompiledA0V7explain",
    # Only `plan` itself: a toggle on `decide` too would switch collection off inside a plan that calls it.
    "plan": r"CompiledA0V4plan7subject",
    "handwritten": r"HandWrittenBaseline0aB0O(15researchCrawler|10mimisupply)y",
    "handwritten-interned": r"HandWrittenBaseline0aB0O6decidey",
    "interned": r"CompiledA0V6decidey\w*InternedRequestV",
}


def entry_points(binary, kind):
    """The public entry symbols of the kind."""
    names = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.split("\n")
    pattern = PATTERNS.get(kind, r"CompiledA0V6decide(y|_8prepared)")
    return [line.split()[-1] for line in names if " T " in line and re.search(pattern, line)]


def run(kind, target, passes):
    with tempfile.TemporaryDirectory() as tmp:
        binary = stripped_copy(tmp)
        out = os.path.join(tmp, "cg.out")
        toggles = [f"--toggle-collect={symbol}" for symbol in entry_points(binary, kind)]
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--compress-strings=no", "--compress-pos=no", *toggles,
             f"--callgrind-out-file={out}", binary, "--profile", kind, target, str(passes)],
            capture_output=True, text=True, env={**os.environ, "SWIFT_DETERMINISTIC_HASHING": "1"})
        if proc.returncode != 0:
            sys.exit(proc.stderr[-2000:])
        collected = int(re.search(r"Collected : (\d+)", proc.stderr).group(1))
        requests = int(re.search(r"passes over (\d+) requests", proc.stdout).group(1))
        return collected, requests


def per_decision(kind, target, passes):
    # Warm-up and filtering in the runner call decide too: count them by running 0 passes and subtract.
    base, n = run(kind, target, 0)
    full, _ = run(kind, target, passes)
    return n, (full - base) / (passes * n)


def main():
    kind, target = sys.argv[1], sys.argv[2]
    passes = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    if kind == "ratio":
        # decide against the String-keyed hand-written rules, the interned decide against the pre-interned ones.
        n, hand = per_decision("handwritten", target, passes)
        _, decide = per_decision("decide", target, passes)
        print(f"{target}: {n} requests x {passes} passes, instructions per decision")
        print(f"  decide {decide:,.0f} / hand-written {hand:,.0f} = {decide / hand:.2f}x")
        _, hand_interned = per_decision("handwritten-interned", target, passes)
        _, interned = per_decision("interned", target, passes) if "interned" in PATTERNS else (0, 0)
        if "interned" in PATTERNS:
            print(f"  interned decide {interned:,.0f} / hand-written over integers {hand_interned:,.0f} = {interned / hand_interned:.2f}x")
        return
    if kind == "plan-ratio":
        n, decide = per_decision("decide", target, passes)
        _, plan = per_decision("plan", target, passes)
        print(f"{target}: {n} requests x {passes} passes, instructions per call")
        print(f"  plan {plan:,.0f} / decide {decide:,.0f} = {plan / decide:.2f}x")
        return
    n, cost = per_decision(kind, target, passes)
    print(f"{kind} {target}: {n} requests x {passes} passes: {cost:,.0f} instructions per decision")


main()
