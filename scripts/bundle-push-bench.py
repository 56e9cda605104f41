#!/usr/bin/env python3
"""Bundle push benchmark (issue 38): N devices on GET /v1/bundle/events of one `policy serve` on loopback.

Reports, never asserts (a benchmark, not a timed test):
  - the server's resident memory per idle stream (RSS with N streams open less RSS before, over N);
  - the server's CPU while the N streams idle (utime + stime over --idle seconds, with heartbeats);
  - from saving a policy file to each device holding the new bundle (the event read, then GET /v1/bundle with
    If-None-Match answered 200 with the new ETag): p50, p99, max; and the reload's own share (save to the event).

A device here is an asyncio connection, not a GatehouseClient: it reads the stream and fetches the bundle as the
client does, but does not verify and compile it (PolicyBundleStore's cost is in docs/bundles.md, "Cost": about a
millisecond for the shipped sets, on the device).

    swift build -c release --product policy
    scripts/bundle-push-bench.py --policy .build/release/policy --clients 1000
"""
import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def wait_for_event(reader, etag_seen):
    """Reads until an `id:` other than etag_seen; returns (the time it arrived, the id)."""
    buffer = b""
    while True:
        chunk = await reader.read(4096)
        if not chunk:
            raise RuntimeError("stream ended")
        buffer += chunk
        for match in re.finditer(rb"id: (\"[0-9a-f]+\")", buffer):
            etag = match.group(1).decode()
            if etag != etag_seen:
                return time.monotonic(), etag


async def fetch(port, etag_held, host):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(host, 0))
    writer.write(f"GET /v1/bundle HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: {etag_held}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    status = int(data.split(b" ", 2)[1])
    etag = re.search(rb"(?i)etag: (\"[0-9a-f]+\")", data)
    return status, etag.group(1).decode() if etag else None


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", default=".build/release/policy")
    parser.add_argument("--set", default="policies/research-crawler")
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle streams for the CPU figure")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="bundle-push-bench-")
    policies = os.path.join(work, os.path.basename(args.set))
    shutil.copytree(args.set, policies)
    key = os.path.join(work, "bundle.key")
    subprocess.run([args.policy, "keygen", "--out", key], check=True, stdout=subprocess.DEVNULL)
    server = subprocess.Popen(
        [args.policy, "serve", "--host", "127.0.0.1", "--port", "0", "--policies", policies,
         "--database", os.path.join(work, "identity.sqlite"), "--bundle-key", key,
         "--max-connections", str(2 * args.clients + 100)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()
        port = int(re.search(r":(\d+)", line.rsplit("/", 1)[0] if line.strip().endswith("/") else line).group(1))
        await asyncio.sleep(1)
        before = rss_kb(server.pid)
        # Devices come from one address: the per-client cap (16) would refuse the rest. Each stream from its own
        # 127.0.0.x address, as devices are from their own.
        streams = []
        for i in range(args.clients):
            host = f"127.0.{(i // 250) + 1}.{(i % 250) + 1}"
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(host, 0))
            writer.write(b"GET /v1/bundle/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            if b" 200 " not in head.split(b"\r\n", 1)[0]:
                raise RuntimeError(head.decode(errors="replace"))
            first = await wait_for_event(reader, None)
            streams.append((reader, writer, first[1], host))
        await asyncio.sleep(2)
        after = rss_kb(server.pid)
        print(f"streams open: {len(streams)}")
        print(f"server RSS: {before} KB before, {after} KB with the streams: {(after - before) / len(streams):.1f} KB per idle stream")

        cpu0, t0 = cpu_seconds(server.pid), time.monotonic()
        await asyncio.sleep(args.idle)
        cpu1, t1 = cpu_seconds(server.pid), time.monotonic()
        print(f"server CPU while {len(streams)} streams idle: {100 * (cpu1 - cpu0) / (t1 - t0):.2f}% of one core over {t1 - t0:.0f} s")

        # Save a policy file, then every device: event, fetch.
        tiers = os.path.join(policies, "tiers.yaml")
        text = open(tiers).read()
        saved = time.monotonic()
        with open(tiers, "w") as f:
            f.write(text + f"\n# bench {time.time()}\n")

        async def device(reader, etag_held, host):
            arrived, etag = await wait_for_event(reader, etag_held)
            status, served = await fetch(port, etag_held, host)
            if status != 200 or served != etag:
                raise RuntimeError(f"fetch answered {status} {served}, event named {etag}")
            return arrived - saved, time.monotonic() - saved

        results = await asyncio.gather(*(device(r, e, h) for r, _, e, h in streams))
        events = [r[0] for r in results]
        installed = [r[1] for r in results]
        print(f"save to event (the reload's settle time and install, then the write): p50 {percentile(events, 50) * 1000:.0f} ms, "
              f"p99 {percentile(events, 99) * 1000:.0f} ms")
        print(f"save to bundle fetched: p50 {percentile(installed, 50) * 1000:.0f} ms, p99 {percentile(installed, 99) * 1000:.0f} ms, "
              f"max {max(installed) * 1000:.0f} ms")
        for _, writer, _, _ in streams:
            writer.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
