#!/usr/bin/env python3
"""The JSON edge per request line: `policy decide --jsonl` reading a file, writing to /dev/null.

Usage (from Benchmarks/, after `swift build -c release --product policy` in the repository root or here):
    scripts/edge-per-line.py [--policy-bin PATH] [--policies DIR] [--what instructions,allocations,rate]

- instructions per line: callgrind's total for a file of N2 lines minus that for N1 lines, over N2 - N1, so process
  start, compiling the policy set and the first block's warm-up cancel out (SWIFT_DETERMINISTIC_HASHING=1);
- allocations per line: memcheck's "total heap usage: N allocs", the same difference, for the whole mix and for
  its allow-only lines;
- lines per second: wall clock of the same difference over 200,000 lines, best of 5, pinned to one core.

The mix is Benchmarks/compare/edge_mix.py's requests() (1,000 seeded research-crawler
requests, repeated to length), so the figures match the co-process comparison's requests.
"""
import argparse, os, re, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../compare"))
import edge_mix  # noqa: E402


def stripped_copy(binary, tmp):
    """valgrind 3.19 cannot read the DWARF 5 swiftc emits: profile a copy without debug info."""
    out = os.path.join(tmp, "policy")
    subprocess.run(["objcopy", "--strip-debug", binary, out], check=True)
    return out


# valgrind 3.19 writes into the signal mask sigsuspend is given; libdispatch's main thread (the CLI ends in
# dispatchMain) passes one in read-only memory, and valgrind dies with SIGSEGV. A preloaded sigsuspend hands the
# kernel a writable copy instead (as scripts/callgrind-per-request.sh does).
SIGSUSPEND_SHIM = r"""
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return (int)syscall(SYS_rt_sigsuspend, &copy, 8); }
"""


def shim(tmp):
    """Builds the sigsuspend shim in `tmp` and returns the environment that preloads it."""
    source, library = os.path.join(tmp, "sigsuspend.c"), os.path.join(tmp, "sigsuspend.so")
    with open(source, "w") as f:
        f.write(SIGSUSPEND_SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", library, source], check=True)
    return {"LD_PRELOAD": library}


PRELOAD = {}


def write_lines(path, lines, count):
    with open(path, "w") as f:
        for i in range(count):
            f.write(lines[i % len(lines)] + "\n")


def callgrind_total(binary, policies, path):
    with tempfile.TemporaryDirectory() as tmp:
        with open(path) as stdin:
            proc = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out", binary, "decide", "--policies", policies, "--jsonl"],
                stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                env={**os.environ, **PRELOAD, "SWIFT_DETERMINISTIC_HASHING": "1"})
    if proc.returncode != 0:
        sys.exit(proc.stderr[-2000:])
    return int(re.search(r"Collected : (\d+)", proc.stderr).group(1))


def allocations(binary, policies, path):
    with open(path) as stdin:
        proc = subprocess.run(["valgrind", "--tool=memcheck", "--leak-check=no", binary, "decide", "--policies", policies, "--jsonl"],
                              stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **PRELOAD})
    return int(re.search(r"total heap usage: ([\d,]+) allocs", proc.stderr).group(1).replace(",", ""))


def wall(binary, policies, path):
    best = None
    for _ in range(5):
        with open(path) as stdin, open(os.devnull, "w") as devnull:
            t0 = time.perf_counter()
            subprocess.run(["taskset", "-c", "1", binary, "decide", "--policies", policies, "--jsonl"], stdin=stdin, stdout=devnull, check=True)
            elapsed = time.perf_counter() - t0
        best = elapsed if best is None else min(best, elapsed)
    return best


def main():
    root = os.path.join(os.path.dirname(__file__), "../..")
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy-bin", default=os.environ.get("GATEHOUSE_POLICY_BIN", os.path.join(root, ".build/release/policy")))
    parser.add_argument("--policies", default=os.path.join(root, "policies/research-crawler"))
    parser.add_argument("--what", default="instructions,allocations,rate")
    parser.add_argument("--lines", type=int, default=2000, help="N2 for callgrind and memcheck (N1 is a tenth)")
    args = parser.parse_args()
    lines = edge_mix.requests()
    what = args.what.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        binary = stripped_copy(args.policy_bin, tmp)
        PRELOAD.update(shim(tmp))
        small, large = args.lines // 10, args.lines
        write_lines(f"{tmp}/small", lines, small)
        write_lines(f"{tmp}/large", lines, large)
        print(f"binary: {args.policy_bin}; mix: {len(lines)} research-crawler requests, "
              f"{sum(len(l) + 1 for l in lines) / len(lines):.0f} bytes per line on average")
        if "instructions" in what:
            a, b = callgrind_total(binary, args.policies, f"{tmp}/small"), callgrind_total(binary, args.policies, f"{tmp}/large")
            print(f"instructions per line (callgrind, {large} - {small} lines): {(b - a) / (large - small):,.0f}")
        if "allocations" in what:
            a, b = allocations(binary, args.policies, f"{tmp}/small"), allocations(binary, args.policies, f"{tmp}/large")
            print(f"allocations per line (memcheck, mix): {(b - a) / (large - small):.2f}")
            # The allow path alone: the mix's lines that research-crawler allows.
            proc = subprocess.run([args.policy_bin, "decide", "--policies", args.policies, "--jsonl"],
                                  input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
            allow = [l for l, d in zip(lines, proc.stdout.splitlines()) if d.startswith('{"decision":"allow"')]
            deny = [l for l, d in zip(lines, proc.stdout.splitlines()) if d.startswith('{"decision":"deny"')]
            for name, subset in [("allow", allow), ("deny", deny)]:
                write_lines(f"{tmp}/s", subset, small)
                write_lines(f"{tmp}/l", subset, large)
                a, b = allocations(binary, args.policies, f"{tmp}/s"), allocations(binary, args.policies, f"{tmp}/l")
                print(f"allocations per line (memcheck, {name} lines only, {len(subset)} distinct): {(b - a) / (large - small):.2f}")
        if "rate" in what:
            write_lines(f"{tmp}/zero", lines, 1)
            write_lines(f"{tmp}/many", lines, 200_000)
            t0, t1 = wall(args.policy_bin, args.policies, f"{tmp}/zero"), wall(args.policy_bin, args.policies, f"{tmp}/many")
            print(f"lines per second (file -> /dev/null, 200,000 lines, best of 5, taskset -c 1): {200_000 / (t1 - t0):,.0f} "
                  f"({(t1 - t0) / 200_000 * 1e9:,.0f} ns per line; process start and compile {t0 * 1000:.0f} ms)")


main()
