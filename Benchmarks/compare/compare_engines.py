#!/usr/bin/env python3
"""Scaling of Cedar (cedarpy) and Rego (regorus) on synthetic role grants, for comparison with Gatehouse.

Usage (needs `pip install cedarpy hobofan-regorus` and the release `policy` binary, built from Benchmarks/ with
`swift build -c release --product policy`; nothing downloaded is committed):
    python3 Benchmarks/compare/compare_engines.py [--sizes 10,1000,10000] [--seconds 2]

For Gatehouse "load ms" is the whole `policy decide` process for one pass (start, read, compile, 256 decisions).

Each engine gets the same synthetic shape as Gatehouse's scaling benchmark (Benchmarks/Sources/PolicySynth):
N rules over max(2, N/10) resource types; rule i applies to type doc_(i % T) and one action, and grants it to a
member role (viewer/commenter/editor) or the owner; requests are 256 seeded (type, action, role) triples.
Cedar is timed with is_authorized_batch over the whole mix (per request = batch time / 256), Rego with one
set_input_json + eval_rule per request. Both include the binding's own overhead (JSON in and out, crossing into
Rust): compare the ratio N/10 between engines, and the absolute numbers only with that caveat.
"""
import argparse, json, random, re, statistics, time

# Gatehouse's in-process decide median per size, filled in by gatehouse() (`gatehouse-bench --decide-file`).
in_process = {}

ACTIONS = ["view", "comment", "edit", "delete", "invite", "export", "upload", "moderate"]
ROLES = ["viewer", "commenter", "editor", "owner"]


def shape(n):
    types = max(2, n // 10)
    rules = [(f"doc_{i % types}", ACTIONS[(i // types) % len(ACTIONS)], ROLES[i % len(ROLES)]) for i in range(n)]
    rng = random.Random(0x6A7E)
    requests = [(f"doc_{rng.randrange(types)}", rng.choice(ACTIONS), rng.choice(ROLES)) for _ in range(256)]
    return rules, requests


def timed(calls, seconds):
    """Median ns per call over passes of the call list, for about `seconds` (at least 3 passes)."""
    for call in calls[:64]:
        call()
    per_call, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(per_call) < 3:
        t0 = time.perf_counter_ns()
        for call in calls:
            call()
        per_call.append((time.perf_counter_ns() - t0) / len(calls))
    return statistics.median(per_call)


def cedar(n, seconds):
    import cedarpy
    rules, requests = shape(n)
    text = "\n".join(
        f'permit(principal, action == Action::"{a}", resource) when {{ resource.kind == "{t}" && principal.role == "{r}" }};'
        for t, a, r in rules)
    t0 = time.perf_counter()
    policies = cedarpy.PolicySet.from_str(text)
    parse_ms = (time.perf_counter() - t0) * 1000
    # One entity store for the whole mix (a user per role, a document per type the mix names), parsed once, and
    # the mix sent as one batch: cedarpy's per-call setup (~300 µs here) would otherwise hide the engine entirely.
    entities = [{"uid": {"type": "User", "id": r}, "attrs": {"role": r}, "parents": []} for r in ROLES]
    entities += [{"uid": {"type": "Doc", "id": t}, "attrs": {"kind": t}, "parents": []} for t in sorted({t for t, _, _ in requests})]
    store = cedarpy.Entities.from_json_str(json.dumps(entities))
    batch = [{"principal": f'User::"{r}"', "action": f'Action::"{a}"', "resource": f'Doc::"{t}"', "context": {}} for t, a, r in requests]
    allowed = sum(result.decision == cedarpy.Decision.Allow for result in cedarpy.is_authorized_batch(batch, policies, store))
    ns = timed([lambda: cedarpy.is_authorized_batch(batch, policies, store)], seconds) / len(batch)
    return ns, parse_ms, allowed


def rego(n, seconds):
    from hobofan_regorus import Engine
    rules, requests = shape(n)
    body = "package authz\nimport rego.v1\n\ndefault allow := false\n\n" + "\n".join(
        f'allow if {{\n  input.resource.kind == "{t}"\n  input.action == "{a}"\n  input.role == "{r}"\n}}' for t, a, r in rules)
    t0 = time.perf_counter()
    engine = Engine()
    engine.add_policy("authz.rego", body)
    parse_ms = (time.perf_counter() - t0) * 1000
    calls, allowed = [], 0
    for t, a, r in requests:
        payload = json.dumps({"resource": {"kind": t}, "action": a, "role": r})

        def call(payload=payload):
            engine.set_input_json(payload)
            return engine.eval_rule("data.authz.allow")

        allowed += call() is True
        calls.append(call)
    return timed(calls, seconds), parse_ms, allowed


def gatehouse(n, seconds):
    """The same grants as a Gatehouse policy set, timed through `policy decide --jsonl` (JSON in and out per request).

    Each action requires an app role nobody holds, so it is denied unless an allow rule grants it, as in the other
    engines; rule i is `allow` on doc_(i % T) for one action when subject.attributes.role is the granted role.
    Per request = (time for R passes over the mix - time for 1 pass) / ((R - 1) x 256), so loading and compiling
    cancel out.
    """
    import os, subprocess, tempfile
    binary = os.environ.get("GATEHOUSE_POLICY_BIN", os.path.join(os.path.dirname(__file__), "../.build/release/policy"))
    rules, requests = shape(n)
    types = max(2, n // 10)
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "types.yaml"), "w") as f:
            f.write("appRoles:\n  nobody: {name: Nobody}\nattributes:\n  subject:\n    role: {enum: [%s]}\nresources:\n" % ", ".join(ROLES))
            for t in range(types):
                f.write(f"  doc_{t}:\n    actions:\n" + "".join(f"      {a}: {{appRoles: [nobody]}}\n" for a in ACTIONS))
        for start in range(0, n, 1000):
            with open(os.path.join(folder, f"rules-{start // 1000:05d}.yaml"), "w") as f:
                f.write("rules:\n")
                for i, (t, a, r) in enumerate(rules[start:start + 1000], start):
                    f.write(f"  - name: grant {i}\n    effect: allow\n    resources: [{t}]\n    actions: [{a}]\n"
                            f"    when: subject.attributes.role == \"{r}\"\n")
        lines = "".join(json.dumps({
            "subject": {"id": "u", "attributes": {"role": r}}, "action": a, "resource": {"type": t},
            "context": {"now": "2026-11-22T12:00:00Z"}}) + "\n" for t, a, r in requests)

        def run(passes):
            t0 = time.perf_counter_ns()
            out = subprocess.run([binary, "decide", "--policies", folder, "--jsonl"], input=lines * passes,
                                 capture_output=True, text=True, check=True).stdout
            return time.perf_counter_ns() - t0, out

        one, out = run(1)
        allowed = sum('"decision":"allow"' in line.replace(" ", "") for line in out.splitlines())
        # The engine alone, in process, over the same folder and requests (no JSON on the timed path).
        bench = os.environ.get("GATEHOUSE_BENCH", os.path.join(os.path.dirname(__file__), "../.build/release/gatehouse-bench"))
        with open(os.path.join(folder, "requests.jsonl"), "w") as f:
            f.write(lines)
        report = subprocess.run([bench, "--decide-file", folder, os.path.join(folder, "requests.jsonl"), "--samples", "200"],
                                capture_output=True, text=True, check=True).stdout
        in_process[n] = float(re.search(r"median ([0-9.]+) ns", report).group(1))
        passes = 1
        while True:
            passes *= 4
            many, _ = run(passes)
            if many - one > seconds * 1e9 or passes >= 4096:
                break
        return (many - one) / ((passes - 1) * len(requests)), one / 1e6, allowed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| engine | rules | load ms | ns per request | allowed of 256 | vs 10 rules |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    engines = [("Gatehouse (policy decide --jsonl)", gatehouse), ("Cedar (cedarpy)", cedar), ("Rego (regorus)", rego)]
    for name, run in engines:
        base = None
        for n in sizes:
            ns, load_ms, allowed = run(n, args.seconds)
            base = base or ns
            print(f"| {name} | {n} | {load_ms:.1f} | {ns:,.0f} | {allowed} | {ns / base:.2f}x |", flush=True)
    if in_process:
        base = in_process[sizes[0]]
        for n in sizes:
            print(f"| Gatehouse (in process, decide) | {n} | | {in_process[n]:,.0f} | | {in_process[n] / base:.2f}x |")


main()
