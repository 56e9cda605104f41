#!/usr/bin/env python3
"""Scaling of Cedar (cedarpy) and Rego (regorus) on synthetic role grants, for comparison with Gatehouse.

Usage (needs `pip install cedarpy hobofan-regorus`; nothing downloaded is committed):
    python3 Benchmarks/compare/compare_engines.py [--sizes 10,1000,10000] [--seconds 2]

Each engine gets the same synthetic shape as Gatehouse's scaling benchmark (Benchmarks/Sources/PolicySynth):
N rules over max(2, N/10) resource types; rule i applies to type doc_(i % T) and one action, and grants it to a
member role (viewer/commenter/editor) or the owner; requests are 256 seeded (type, action, role) triples.
Times are per call through the Python binding (median of batches), which includes the binding's own overhead
(building the request and entities, crossing into Rust): compare the ratio N/10 between engines, and the
absolute numbers only with that caveat.
"""
import argparse, json, random, statistics, time

ACTIONS = ["view", "comment", "edit", "delete", "invite", "export", "upload", "moderate"]
ROLES = ["viewer", "commenter", "editor", "owner"]


def shape(n):
    types = max(2, n // 10)
    rules = [(f"doc_{i % types}", ACTIONS[(i // types) % len(ACTIONS)], ROLES[i % len(ROLES)]) for i in range(n)]
    rng = random.Random(0x6A7E)
    requests = [(f"doc_{rng.randrange(types)}", rng.choice(ACTIONS), rng.choice(ROLES)) for _ in range(256)]
    return rules, requests


def timed(calls, seconds):
    """Median ns per call over batches of the request list, for about `seconds`."""
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
    calls, allowed = [], 0
    for t, a, r in requests:
        entities = [
            {"uid": {"type": "User", "id": "u"}, "attrs": {"role": r}, "parents": []},
            {"uid": {"type": "Doc", "id": "d"}, "attrs": {"kind": t}, "parents": []},
        ]
        request = {"principal": 'User::"u"', "action": f'Action::"{a}"', "resource": 'Doc::"d"', "context": {}}
        entities_handle = cedarpy.Entities.from_json_str(json.dumps(entities))  # parsed once, as the policies are
        allowed += cedarpy.is_authorized(request, policies, entities_handle).decision == cedarpy.Decision.Allow
        calls.append(lambda request=request, e=entities_handle: cedarpy.is_authorized(request, policies, e))
    return timed(calls, seconds), parse_ms, allowed


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| engine | rules | load ms | median ns per call | allowed of 256 | vs 10 rules |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, run in [("Cedar (cedarpy)", cedar), ("Rego (regorus)", rego)]:
        base = None
        for n in sizes:
            ns, load_ms, allowed = run(n, args.seconds)
            base = base or ns
            print(f"| {name} | {n} | {load_ms:.1f} | {ns:,.0f} | {allowed} | {ns / base:.2f}x |", flush=True)


main()
