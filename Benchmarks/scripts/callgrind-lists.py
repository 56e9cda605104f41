#!/usr/bin/env python3
"""Instructions per whole listing (every page of a user's 10,000 of 20,000 projects) through the facade's `resources`,
next to the plain SELECT of the same ids through the same pool, under callgrind, which counts instead of timing.

Usage (from Benchmarks/, after `swift build -c release --product gatehouse-bench`):
    scripts/callgrind-lists.py [ROUNDS] [KEEP_DIR]

Runs `gatehouse-bench --profile-lists ROUNDS` under callgrind. The runner builds the world (`ListWorld`), checks every
listing's ids against the SELECT's, then runs each listing ROUNDS times between two labelled dumps
(client requests, `CallgrindMarks`), so each dump holds one listing's instructions on every thread (the caller's task,
GRDB's reader queue, SQLite) and nothing of the set-up. Prints instructions per listing and per page, and the ratios
to the SELECT. KEEP_DIR keeps the dumps for `callgrind_annotate --inclusive=yes KEEP_DIR/lists-limit1000`.
SWIFT_DETERMINISTIC_HASHING=1 and the runner's fixed ids make the counts repeat from run to run.
"""
import os, re, shutil, subprocess, sys, tempfile
import callgrind_common

BENCH = os.environ.get("GATEHOUSE_BENCH", ".build/release/gatehouse-bench")


def stripped_copy(tmp):
    """The runner copied without debug info (callgrind_common.stripped_copy)."""
    return callgrind_common.stripped_copy(tmp, BENCH)


# The runner's top-level code is async: its main thread parks in libdispatch's sigsuspend, on which valgrind 3.19
# crashes ("the 'impossible' happened"); the same shim as scripts/list-http-load.py's passes the mask by syscall.
SIGSUSPEND = r'''
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return (int)syscall(SYS_rt_sigsuspend, &copy, 8); }
'''


def sigsuspend_shim(tmp):
    source = os.path.join(tmp, "sigsuspend.c")
    with open(source, "w") as f:
        f.write(SIGSUSPEND)
    shim = os.path.join(tmp, "sigsuspend.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", shim, source], check=True)
    return shim


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    keep = sys.argv[2] if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory() as tmp:
        binary = stripped_copy(tmp)
        out = os.path.join(tmp, "cg.out")
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "--profile-lists", str(rounds)],
            capture_output=True, text=True,
            env={**os.environ, "SWIFT_DETERMINISTIC_HASHING": "1", "LD_PRELOAD": sigsuspend_shim(tmp)})
        if proc.returncode != 0:
            sys.exit(proc.stdout[-2000:] + proc.stderr[-4000:])
        totals = {}
        for name in os.listdir(tmp):
            if not name.startswith("cg.out"):
                continue
            path = os.path.join(tmp, name)
            text = open(path, errors="replace").read()
            label = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
            total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
            if label and total and label.group(1).startswith("lists-"):
                totals[label.group(1)] = int(total.group(1))
                if keep:
                    os.makedirs(keep, exist_ok=True)
                    shutil.copy(path, os.path.join(keep, label.group(1)))
    missing = {"lists-select", "lists-limit1000", "lists-limit100"} - set(totals)
    if missing:
        sys.exit("no callgrind dump for %s" % ", ".join(sorted(missing)))
    select = totals["lists-select"] / rounds
    print("instructions per whole listing (10,000 ids), %d rounds each, callgrind, every thread:" % rounds)
    print("  plain SELECT (GRDB String.fetchAll, the store's pool): %12.0f" % select)
    for limit in (1000, 100):
        each = totals["lists-limit%d" % limit] / rounds
        print("  resources, every page, limit %4d:                   %12.0f  (%.2fx the SELECT; %.0f a page)" % (
            limit, each, each / select, each / (10000 // limit)))
    if keep:
        print("dumps in %s (callgrind_annotate --inclusive=yes %s/lists-limit1000)" % (keep, keep))


if __name__ == "__main__":
    main()
