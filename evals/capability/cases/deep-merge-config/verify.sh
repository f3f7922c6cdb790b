# Grader: merge() merges nested dicts, replaces lists, deletes keys set to
# None and leaves its arguments alone; load_layers() uses it.
set -euo pipefail
python3 - <<'PY'
import copy
from merge import load_layers, merge

base = {"a": {"x": 1, "y": {"p": 1, "q": 2}}, "l": [1, 2], "gone": 1, "keep": "k"}
over = {"a": {"y": {"q": 3}, "z": 4}, "l": [3], "gone": None, "new": {"n": 1}}
snapshot = (copy.deepcopy(base), copy.deepcopy(over))
got = merge(base, over)
want = {"a": {"x": 1, "y": {"p": 1, "q": 3}, "z": 4}, "l": [3], "keep": "k", "new": {"n": 1}}
assert got == want, got
assert (base, over) == snapshot, "merge modified its arguments"
got["a"]["y"]["p"] = 99
assert base["a"]["y"]["p"] == 1, "merge result shares nested dicts with base"
cfg = load_layers(["base.json", "prod.json"])
assert cfg == {"server": {"host": "0.0.0.0", "port": 443, "tls": {"enabled": True}}, "features": ["a"]}, cfg
print("merge ok")
PY
