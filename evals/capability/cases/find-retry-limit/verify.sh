# Grader: ANSWER.md starts with the effective default retry limit and names
# the file that sets it.
set -euo pipefail
[ -f ANSWER.md ] || { echo "ANSWER.md missing"; exit 1; }
first=$(head -n 1 ANSWER.md | tr -d '[:space:]')
[ "$first" = 5 ] || { echo "first line of ANSWER.md is '$first', not the effective default"; exit 1; }
grep -q "defaults.json" ANSWER.md || { echo "ANSWER.md does not name the file that sets it"; exit 1; }
echo "answer ok"
