# Grader: release.cfg carries this repeat's token from the HTTP fixture, and
# nothing else in it changed.
set -euo pipefail
: "${EVAL_HTTP_TOKEN:?the runner passes EVAL_HTTP_TOKEN to this grader}"
grep -qx "token = $EVAL_HTTP_TOKEN" release.cfg || { echo "release.cfg lacks 'token = <this repeat's token>'"; exit 1; }
! grep -q REPLACE_ME release.cfg || { echo "REPLACE_ME is still there"; exit 1; }
grep -qx "version = 2.4.0" release.cfg && grep -qx "channel = stable" release.cfg || { echo "other settings changed"; exit 1; }
echo "release.cfg ok"
