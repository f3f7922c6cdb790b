# The grader: run as `bash verify.sh` in the repeat's workdir, after the agent.
# Exit 0 means the task is done. It must fail on the untouched fixture and
# pass after the oracle (`capeval validate --graders` checks both).
set -euo pipefail
out=$(python3 -c 'import greet; print(greet.greet("Bo"))')
[ "$out" = "Hello, Bo" ] || { echo "greet('Bo') returned '$out'"; exit 1; }
echo "greeting ok"
