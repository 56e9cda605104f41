#!/usr/bin/env python3
"""Give every operation of docs/openapi.yaml an operationId and a tag, where it has none, in place.

The id is the method and the path without /v1 in camel case (POST /v1/auth/pin/signin -> postAuthPinSignin;
{id} -> ById), the tag the route group (the first segment after /v1; health for /healthz, /readyz and /metrics).
Run it after adding routes; OpenAPISpecTests fails while an operation lacks either. Lines are inserted right
after the method line, so the rest of the file keeps its formatting.
"""
import re
import sys

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def operation_id(method: str, path: str) -> str:
    parts = [p for p in path.strip("/").split("/") if p and p != "v1"]
    words = []
    for part in parts:
        if part.startswith("{"):
            words.append("By" + part.strip("{}").capitalize())
        else:
            words.extend(w.capitalize() for w in re.split(r"[-_.]", part) if w)
    return method + "".join(words)


def tag(path: str) -> str:
    parts = [p for p in path.strip("/").split("/") if p and p != "v1"]
    if not parts or parts[0] in ("healthz", "readyz", "metrics"):
        return "health"
    if parts[0] in ("decide", "explain", "check", "policy", "plan", "resources", "bundle"):
        return "decisions" if parts[0] in ("decide", "explain", "check") else parts[0]
    return parts[0]


def main(path: str) -> int:
    lines = open(path, encoding="utf-8").read().split("\n")
    out, current, in_paths = [], None, False
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        if line.startswith("paths:"):
            in_paths = True
        elif in_paths and line and not line.startswith(" "):
            in_paths = False
        if in_paths:
            m = re.match(r"^  (/\S*):\s*$", line)
            if m:
                current = m.group(1)
            m = re.match(r"^    (" + "|".join(METHODS) + r"):\s*$", line)
            if m and current:
                block = []
                j = i + 1
                while j < len(lines) and (lines[j].startswith("      ") or not lines[j].strip()):
                    block.append(lines[j])
                    j += 1
                if not any(b.startswith("      operationId:") for b in block):
                    out.append(f"      operationId: {operation_id(m.group(1), current)}")
                if not any(b.startswith("      tags:") for b in block):
                    out.append(f"      tags: [{tag(current)}]")
        i += 1
    open(path, "w", encoding="utf-8").write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/openapi.yaml"))
