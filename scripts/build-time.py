#!/usr/bin/env python3
"""Which modules cost a clean build, in CPU seconds (not wall clock: the machine is shared).

Usage:
    scripts/build-time.py build --scratch-path DIR --out OUT [--package-path P] [--configuration release|debug]
                                [--product policy] [--priority idle] [--seed-from .build-release]
                                [-- extra swift build arguments]
    scripts/build-time.py report OUT

`build` runs one `swift build` into a scratch path that must not exist yet (so the build is clean; the script
never deletes a build directory) and records:
- every Swift frontend job's user and system time (`-stats-output-dir OUT/stats`: in a release build one job
  per module, whole-module; in a debug build one per batch of files), split by phase (type checking, SILGen,
  SIL optimisation, IRGen, LLVM);
- every C/C++ compile's user and system time (`CC` set to a wrapper that runs clang under `/usr/bin/time`);
- the whole build's user and system time (`/usr/bin/time` around `swift build`: every process it waited for),
  so linking, the build plan and plugins are what remains after the two lists;
- `-warn-long-function-bodies=200` and `-warn-long-expression-type-checking=200` warnings (only our own modules
  show them: SwiftPM passes `-suppress-warnings` to dependencies).
`report` prints per module CPU seconds, share of the build, and the phases, ours and the dependencies' apart.
"""
import argparse, collections, glob, json, os, re, subprocess, sys, time

CC_WRAPPER = """#!/bin/bash
# clang under /usr/bin/time: appends "user sys output" to $BUILD_TIME_CC_LOG.
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
exec /usr/bin/time -a -o "$BUILD_TIME_CC_LOG" -f "%U %S $out" "$BUILD_TIME_CLANG" "$@"
"""

PHASES = [
    ("parse+imports", ["parse-and-resolve-imports", "load-stdlib"]),
    ("type-check", ["Type checking and Semantic analysis"]),
    ("SILGen", ["SILGen"]),
    ("SIL opt", ["SIL optimization"]),
    ("IRGen", ["IRGen"]),
    ("LLVM", ["LLVM pipeline"]),
]


def build(args, extra):
    if os.path.exists(args.scratch_path):
        sys.exit(f"{args.scratch_path} exists: give a scratch path of its own (the build must be clean)")
    out = os.path.abspath(args.out)
    if args.seed_from:
        # The sources of the dependencies only (no build products): resolving needs no network and compiles nothing.
        os.makedirs(args.scratch_path)
        for name in ["checkouts", "repositories", "artifacts", "workspace-state.json"]:
            if os.path.exists(f"{args.seed_from}/{name}"):
                subprocess.run(["cp", "-a", f"{args.seed_from}/{name}", args.scratch_path], check=True)
    os.makedirs(f"{out}/stats", exist_ok=True)
    wrapper = f"{out}/cc-wrapper.sh"
    with open(wrapper, "w") as f:
        f.write(CC_WRAPPER)
    os.chmod(wrapper, 0o755)
    clang = subprocess.run(["bash", "-c", "command -v clang"], capture_output=True, text=True).stdout.strip()
    env = {**os.environ, "CC": wrapper, "BUILD_TIME_CC_LOG": f"{out}/cc.log", "BUILD_TIME_CLANG": clang}
    swiftc = []
    for flag in [f"-stats-output-dir", f"{out}/stats", "-Xfrontend", "-warn-long-function-bodies=200",
                 "-Xfrontend", "-warn-long-expression-type-checking=200"]:
        swiftc += ["-Xswiftc", flag]
    command = ["swift", "build", "--package-path", args.package_path, "--scratch-path", args.scratch_path,
               "-c", args.configuration, *(["--product", args.product] if args.product else []), *swiftc, *extra]
    if args.priority == "idle":
        command = ["chrt", "-i", "0", *command]
    command = ["/usr/bin/time", "-o", f"{out}/total.time", "-f", "%e %U %S %M", *command]
    with open(f"{out}/command.txt", "w") as f:
        f.write(" ".join(command) + "\n")
    load = open("/proc/loadavg").read().split()[:3]
    started = time.time()
    with open(f"{out}/build.log", "w") as log:
        code = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    with open(f"{out}/meta.json", "w") as f:
        json.dump({"load_before": load, "load_after": open("/proc/loadavg").read().split()[:3],
                   "started": started, "ended": time.time(), "exit": code}, f)
    if code != 0:
        sys.exit(f"swift build failed ({code}): see {out}/build.log")
    report(out)


def module_of_stats(path):
    # stats-<pid>-swift-frontend-<Module>-<file or all>-<triple>-o-<opt>-<n>.json
    m = re.search(r"swift-frontend-(.+?)-(?:all|[^-]+\.swift)-x86_64", os.path.basename(path))
    return m.group(1) if m else os.path.basename(path)


def report(out):
    ours = set(os.path.basename(p) for p in glob.glob(os.path.join(os.path.dirname(__file__), "../Sources/*")))
    ours |= {"gatehouse_client_app", "ClientApp"}
    cpu = collections.Counter()
    kind = {}
    phases = collections.defaultdict(collections.Counter)
    jobs = collections.Counter()
    for path in glob.glob(f"{out}/stats/*.json"):
        with open(path) as f:
            stats = json.load(f)
        module = module_of_stats(path)
        total = sum(v for k, v in stats.items() if k.startswith("time.swift-frontend.") and not k.endswith(".wall"))
        cpu[module] += total
        jobs[module] += 1
        kind[module] = "Swift"
        for name, keys in PHASES:
            phases[module][name] += sum(stats.get(f"time.swift.{k}.user", 0) + stats.get(f"time.swift.{k}.sys", 0) for k in keys)
    c_files = collections.Counter()
    if os.path.exists(f"{out}/cc.log"):
        for line in open(f"{out}/cc.log"):
            parts = line.split(maxsplit=2)
            if len(parts) < 3 or not re.match(r"^[\d.]+$", parts[0]):
                continue
            m = re.search(r"/([^/]+)\.build/", parts[2])
            module = m.group(1) if m else parts[2].strip()
            cpu[module] += float(parts[0]) + float(parts[1])
            c_files[module] += 1
            kind.setdefault(module, "C")
    elapsed, user, system, peak = open(f"{out}/total.time").read().split()[-4:]
    whole = float(user) + float(system)
    meta = json.load(open(f"{out}/meta.json")) if os.path.exists(f"{out}/meta.json") else {}
    print(f"whole build: {whole:,.0f} s CPU ({float(user):,.0f} user + {float(system):,.0f} sys), {float(elapsed):,.0f} s wall, "
          f"peak {int(peak) // 1024} MB; load before/after {meta.get('load_before')} / {meta.get('load_after')}")
    listed = sum(cpu.values())
    print(f"Swift frontend jobs + C compiles: {listed:,.0f} s; the rest (linking, driver, plan, plugins): {whole - listed:,.0f} s\n")
    header = "| module | ours? | kind | CPU s | share | " + " | ".join(p for p, _ in PHASES) + " |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for side in (True, False):
        for module, seconds in cpu.most_common():
            if (module in ours) != side:
                continue
            ph = " | ".join(f"{phases[module][p]:.1f}" if kind[module] == "Swift" else "" for p, _ in PHASES)
            what = kind[module] + (f" ({c_files[module]} files)" if c_files[module] else "")
            print(f"| {module} | {'ours' if side else ''} | {what} | {seconds:.1f} | {seconds / whole:.1%} | {ph} |")
    mine = sum(s for m, s in cpu.items() if m in ours)
    print(f"\nours: {mine:,.0f} s ({mine / whole:.1%}); dependencies: {listed - mine:,.0f} s ({(listed - mine) / whole:.1%}); "
          f"rest: {whole - listed:,.0f} s ({(whole - listed) / whole:.1%})")
    log = open(f"{out}/build.log").read() if os.path.exists(f"{out}/build.log") else ""
    slow = sorted(set(re.findall(r"^(/\S+?:\d+:\d+): warning: (.*(?:took|type-check).*)$", log, re.M)))
    print(f"\ntype-checker warnings over 200 ms: {len(slow)}")
    for where, what in slow:
        print(f"  {where}: {what}")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--scratch-path", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--package-path", default=".")
    b.add_argument("--configuration", default="release")
    b.add_argument("--product", default="policy")
    b.add_argument("--seed-from", help="copy checkouts/, repositories/ and workspace-state.json from this scratch path first")
    b.add_argument("--priority", default="idle", choices=["idle", "normal"])
    r = sub.add_parser("report")
    r.add_argument("out")
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    args = parser.parse_args(argv)
    if args.cmd == "build":
        build(args, extra)
    else:
        report(args.out)


main()
