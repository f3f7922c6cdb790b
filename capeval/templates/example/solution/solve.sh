# The oracle: a reference solution, run as `bash solution/solve.sh` in the
# repeat's workdir. `capeval validate --graders` plays it to prove the grader
# honest, and the scripted agent plays it for the cell scripted:oracle.
set -euo pipefail
python3 - <<'PY'
from pathlib import Path

path = Path("greet.py")
path.write_text(path.read_text().replace('"Helo, "', '"Hello, "'))
PY
