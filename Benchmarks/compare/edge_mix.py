"""The request mix of the JSON-edge benchmarks (compare_engines.py --coprocess, scripts/edge-per-line.py)."""
import json, random


def requests():
    """A seeded mix of research-crawler requests, as JSON lines: every app action at every tier (signed out, expired,
    unknown tier), the sources limit either side of 50, privacy consent on and off, project actions for the owner,
    each member role and strangers, and unknown actions."""
    rng = random.Random(0xC0DE)
    tiers = ["free", "pro", "academic", "team", "Pro"]
    lines = []
    for i in range(1000):
        subject = {"id": f"user-{rng.randrange(4)}", "tier": rng.choice(tiers)}
        if rng.random() < 0.1:
            subject = {}
        if rng.random() < 0.15:
            subject["subscriptionExpiry"] = rng.choice(["2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"])
        if rng.random() < 0.1:
            subject["auth"] = {"method": rng.choice(["anonymous", "pin"]), "verifiedAt": "2026-11-22T11:58:00Z"}
        kind = rng.randrange(5)
        if kind == 0:
            action, resource = rng.choice(["ai_suggestions", "cloud_sync", "advanced_export", "collaboration"]), {"type": "app"}
        elif kind == 1:
            action, resource = "add_source", {"type": "app", "usage": {"sources": rng.randrange(45, 56)}}
        elif kind == 2:
            action, resource = rng.choice(["send_analytics", "send_crash_report", "send_source_metadata", "send_user_notes"]), {"type": "app"}
            subject["attributes"] = {"analytics": rng.random() < 0.5, "crashReporting": rng.random() < 0.5,
                                     "aiSuggestions": rng.random() < 0.5, "dataSharing": rng.choice(["none", "minimal", "standard"])}
        elif kind == 3:
            action = rng.choice(["view", "comment", "edit", "delete", "invite"])
            members = {f"user-{u}": rng.choice(["viewer", "commenter", "editor", "owner"]) for u in range(4) if rng.random() < 0.5}
            resource = {"type": "project", "id": "p1", "ownerId": rng.choice(["user-0", "user-9"]), "members": members}
        else:
            action, resource = rng.choice(["archive", "view"]), {"type": rng.choice(["app", "folder"])}
        lines.append(json.dumps({"subject": subject, "action": action, "resource": resource,
                                 "context": {"now": "2026-11-22T12:00:00Z"}}, separators=(",", ":")))
    return lines
