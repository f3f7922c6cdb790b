# Grader: DEFAULTS has the new values, keeps every other key, and the module
# (with its comment and helper) is intact.
set -euo pipefail
python3 - <<'PY'
import settings

want = {"timeout": 30, "retries": 5, "backoff": 1.5, "user_agent": "fetcher/1.0", "verify_tls": True}
assert settings.DEFAULTS == want, settings.DEFAULTS
assert settings.effective({"retries": 1})["retries"] == 1
PY
grep -q "^# Connection defaults; every key is read by client.py.$" settings.py || { echo "comment lost"; exit 1; }
echo "settings ok"
