#!/usr/bin/env python3
"""Scaling of Cedar (cedarpy) and Rego (regorus) on synthetic role grants, for comparison with Gatehouse.

Usage (needs `pip install cedarpy celine-regorus` (or hobofan-regorus) and the release `policy` binary, built from
Benchmarks/ with `swift build -c release --product policy`; nothing downloaded is committed):
    python3 Benchmarks/compare/compare_engines.py [--sizes 10,1000,10000] [--seconds 2]
    python3 Benchmarks/compare/compare_engines.py --coprocess [--seconds 2]   # the JSON edge, see coprocess()

For Gatehouse "load ms" is the whole `policy decide` process for one pass (start, read, compile, 256 decisions).

Each engine gets the same synthetic shape as Gatehouse's scaling benchmark (Benchmarks/Sources/PolicySynth):
N rules over max(2, N/10) resource types; rule i applies to type doc_(i % T) and one action, and grants it to a
member role (viewer/commenter/editor) or the owner; requests are 256 seeded (type, action, role) triples.
Cedar is timed with is_authorized_batch over the whole mix (per request = batch time / 256), Rego with one
set_input_json + eval_rule per request. Both include the binding's own overhead (JSON in and out, crossing into
Rust): compare the ratio N/10 between engines, and the absolute numbers only with that caveat.
"""
import argparse, json, os, random, re, statistics, subprocess, tempfile, threading, time

import edge_mix

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


def regorus_engine():
    try:
        from regorus import Engine
    except ImportError:
        from hobofan_regorus import Engine
    return Engine()


def rego(n, seconds):
    rules, requests = shape(n)
    body = "package authz\nimport rego.v1\n\ndefault allow := false\n\n" + "\n".join(
        f'allow if {{\n  input.resource.kind == "{t}"\n  input.action == "{a}"\n  input.role == "{r}"\n}}' for t, a, r in rules)
    t0 = time.perf_counter()
    engine = regorus_engine()
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
    parser.add_argument("--coprocess", action="store_true", help="the JSON edge as a co-process, against regorus")
    parser.add_argument("--policies", default=os.path.join(os.path.dirname(__file__), "../../policies/research-crawler"))
    args = parser.parse_args()
    if args.coprocess:
        coprocess(args.policies, args.seconds)
        return
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


# research-crawler's rules in Rego, for regorus: the same decisions (reason, message, limit figures, upgradeTo) as
# the shipped set over edge_mix.requests(); coprocess() checks that they agree before timing anything.
RESEARCH_CRAWLER_REGO = r"""
package gatehouse
import rego.v1

tier_names := {"free": "Free", "pro": "Pro", "academic": "Academic", "team": "Team"}
features := {
  "ai_suggestions": {"name": "AI Suggestions", "tiers": {"pro", "academic", "team"}, "upgrade": "pro"},
  "cloud_sync": {"name": "Cloud Sync", "tiers": {"pro", "academic", "team"}, "upgrade": "pro"},
  "advanced_export": {"name": "Advanced Export", "tiers": {"pro", "academic", "team"}, "upgrade": "pro"},
  "collaboration": {"name": "Collaboration", "tiers": {"team"}, "upgrade": "team"},
}
source_caps := {"free": 50}
consents := {"send_analytics": "analytics", "send_crash_report": "crash reports",
             "send_source_metadata": "source metadata", "send_user_notes": "your notes"}
project_actions := {"view", "comment", "edit", "delete", "invite"}
grants := {"viewer": {"view"}, "commenter": {"view", "comment"}, "editor": {"view", "comment", "edit"}}

signed_in if {
  input.subject.id != ""
  not input.subject.auth.method == "anonymous"
}

now_ns := time.parse_rfc3339_ns(input.context.now) if input.context.now else := time.now_ns()

active if not input.subject.subscriptionExpiry
active if time.parse_rfc3339_ns(input.subject.subscriptionExpiry) >= now_ns

tier := input.subject.tier if {
  signed_in
  tier_names[input.subject.tier]
  active
} else := "free"

consent_given("send_analytics") if input.subject.attributes.analytics == true
consent_given("send_crash_report") if input.subject.attributes.crashReporting == true
consent_given("send_source_metadata") if {
  input.subject.attributes.aiSuggestions == true
  input.subject.attributes.dataSharing
  input.subject.attributes.dataSharing != "none"
}

allowed := {"decision": "allow", "reason": "allowed"}

decision := d if {
  input.resource.type == "app"
  d := feature_decision(features[input.action])
} else := d if {
  input.resource.type == "app"
  input.action == "add_source"
  d := limit_decision
} else := d if {
  input.resource.type == "app"
  consents[input.action]
  d := consent_decision
} else := d if {
  input.resource.type == "project"
  input.action in project_actions
  d := project_decision
} else := {"decision": "deny", "reason": "default_deny", "message": "This action is not allowed."}

feature_decision(f) := allowed if {
  tier in f.tiers
} else := {"decision": "deny", "reason": "requires_upgrade",
           "message": sprintf("%s requires %s. Upgrade to unlock.", [f.name, tier_names[f.upgrade]]), "upgradeTo": f.upgrade}

used := object.get(input.resource, ["usage", "sources"], 0)

limit_decision := allowed if {
  not source_caps[tier]
} else := {"decision": "allow", "reason": "allowed", "limit": cap, "used": used, "remaining": cap - used} if {
  cap := source_caps[tier]
  used < cap
} else := {"decision": "deny", "reason": "limit_exceeded",
           "message": sprintf("You've reached the limit of %d sources. Upgrade to Pro for unlimited.", [source_caps[tier]]),
           "limit": source_caps[tier], "used": used, "remaining": 0, "upgradeTo": "pro"}

consent_decision := allowed if {
  consent_given(input.action)
} else := {"decision": "deny", "reason": "consent_required",
           "message": sprintf("Your privacy settings don't allow sending %s.", [consents[input.action]])}

member_role := input.resource.members[input.subject.id]

owner if input.resource.ownerId == input.subject.id
owner if member_role == "owner"

project_decision := {"decision": "deny", "reason": "unauthenticated", "message": "Sign in to continue."} if {
  not signed_in
} else := allowed if {
  owner
} else := allowed if {
  input.action in grants[member_role]
} else := {"decision": "deny", "reason": "owner_only", "message": "Only the owner can perform this action."} if {
  member_role
  input.action in {"delete", "invite"}
} else := {"decision": "deny", "reason": "access_denied", "message": "You don't have permission for this action."} if {
  member_role
} else := {"decision": "deny", "reason": "not_member", "message": "You're not a member of this project."}
"""


class LineProcess:
    """A child process spoken to in JSON lines over pipes: a batch is written from a thread while answers are read,
    so neither side blocks on a full pipe."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.inp, self.out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self.pending = b""

    def _read_lines(self, count):
        lines, buffer = [], self.pending
        while len(lines) < count:
            chunk = os.read(self.out, 1 << 16)
            if not chunk:
                raise RuntimeError("the child closed its output")
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            lines += complete
        self.pending = buffer
        return lines

    def ask(self, payload, count):
        writer = threading.Thread(target=lambda: os.write(self.inp, payload) if len(payload) < 65536 else self._write_all(payload))
        writer.start()
        lines = self._read_lines(count)
        writer.join()
        return lines

    def _write_all(self, payload):
        view = memoryview(payload)
        while view:
            view = view[os.write(self.inp, view):]

    def ask_one(self, line):
        os.write(self.inp, line)
        return self._read_lines(1)[0]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def rate(run, seconds, per_call):
    """Requests per second over repeated calls of `run` (each answering `per_call` requests) for about `seconds`."""
    run()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        run()
        calls += 1
    return calls * per_call / (time.perf_counter() - start)


def coprocess(policies, seconds, rounds=5):
    """The JSON edge as another language's service uses it, all in this one run: batches of 1,000 request lines and
    single round trips (write one line, wait for its answer), through `policy decide --jsonl`, through a trivial C
    responder that parses nothing (the pipe's ceiling), and through regorus evaluating research-crawler's rules in
    Rego in this process (set_input_json + eval_rule per request: it pays JSON in, not out). Answers are read as
    lines, not parsed. Each engine's figure is its best of `rounds` turns of `seconds / rounds`."""
    binary = os.environ.get("GATEHOUSE_POLICY_BIN", os.path.join(os.path.dirname(__file__), "../.build/release/policy"))
    lines = edge_mix.requests()
    batch = ("\n".join(lines) + "\n").encode()
    engine = regorus_engine()
    engine.add_policy("gatehouse.rego", RESEARCH_CRAWLER_REGO)

    def rego_one(line):
        engine.set_input_json(line)
        return engine.eval_rule("data.gatehouse.decision")

    gatehouse = LineProcess([binary, "decide", "--policies", policies, "--jsonl"])
    answers = [json.loads(a) for a in gatehouse.ask(batch, len(lines))]
    mismatches = [(line, a, rego_one(line)) for a, line in zip(answers, lines)
                  if {k: v for k, v in a.items() if k != "policy"} != rego_one(line)]
    agree = len(lines) - len(mismatches)
    for line, a, r in mismatches[:3]:
        print(f"disagree: {line}\n  gatehouse {a}\n  regorus   {r}")
    print(f"regorus and Gatehouse agree on {agree} of {len(lines)} decisions (every field but Gatehouse's 'policy')")

    with tempfile.TemporaryDirectory() as folder:
        responder = os.path.join(folder, "trivial-responder")
        subprocess.run(["cc", "-O2", "-o", responder, os.path.join(os.path.dirname(__file__), "trivial_responder.c")], check=True)
        trivial = LineProcess([responder])
        single = [line.encode() + b"\n" for line in lines[:100]]

        def round_trips(proc):
            for line in single:
                proc.ask_one(line)

        def rego_batch(batch_lines):
            for line in batch_lines:
                rego_one(line)

        engines = [
            ("Gatehouse, policy decide --jsonl", lambda: gatehouse.ask(batch, len(lines)), lambda: round_trips(gatehouse)),
            ("trivial responder (parses nothing)", lambda: trivial.ask(batch, len(lines)), lambda: round_trips(trivial)),
            ("regorus (in process, Rego)", lambda: rego_batch(lines), lambda: rego_batch(lines[:100])),
        ]
        # The neighbours' load moves wall clock a lot here: the engines take turns over several rounds and each
        # keeps its best round, so a burst of load does not land on one engine only.
        best = {name: [0, 0] for name, _, _ in engines}
        for _ in range(rounds):
            for name, batch_run, single_run in engines:
                best[name][0] = max(best[name][0], rate(batch_run, seconds / rounds, len(lines)))
                best[name][1] = max(best[name][1], rate(single_run, seconds / rounds, len(single)))
        rows = [(name, *best[name]) for name, _, _ in engines]
        gatehouse.close()
        trivial.close()
    print("| engine | batches of 1,000: requests/s | single round trips/s | µs per round trip |")
    print("| --- | ---: | ---: | ---: |")
    for name, batched, single_rate in rows:
        print(f"| {name} | {batched:,.0f} | {single_rate:,.0f} | {1e6 / single_rate:.1f} |")
    g, t, r = rows
    print(f"\nGatehouse batched / regorus: {g[1] / r[1]:.1f}x; Gatehouse round trip / trivial responder's: {t[2] / g[2]:.2f}x the time")


main()
