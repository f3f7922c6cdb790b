# Grader: versions compare numerically, part by part.
set -euo pipefail
python3 - <<'PY'
from semver import compare, latest

assert compare("1.10.0", "1.9.0") == 1
assert compare("1.9.0", "1.10.0") == -1
assert compare("2.0.0", "10.0.0") == -1
assert compare("1.2.3", "1.2.3") == 0
assert compare("0.0.10", "0.0.9") == 1
assert latest(["1.2.0", "1.10.1", "1.9.9"]) == "1.10.1"
print("semver ok")
PY
