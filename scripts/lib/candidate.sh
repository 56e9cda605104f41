# Sourced by the decision-log scripts: the candidate policy set they shadow and replay against.

# Copies research-crawler to DEST with the free tier's sources limit lowered (50 -> 40) and AI suggestions given to
# free: both changes decide some of the scripts' requests otherwise.
shadow_candidate() {  # DEST
  cp -r policies/research-crawler "$1"
  python3 - "$1/tiers.yaml" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
gate = "    name: AI Suggestions\n    tiers: [pro, academic, team]"
assert "free: 50" in text and gate in text
open(path, "w").write(text.replace("free: 50", "free: 40").replace(gate, gate.replace("[pro", "[free, pro")))
PY
}
