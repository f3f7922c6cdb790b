# The grader of {{ID}}: run as `bash verify.sh` in the repeat's workdir, after
# the agent; exit 0 means the task is done. Replace the check below with
# yours: it must fail on the untouched fixture and pass after the oracle
# (`capeval validate --graders` checks both).
set -euo pipefail
grep -qx 'status: done' STATUS.md || { echo "STATUS.md does not say 'status: done'"; exit 1; }
