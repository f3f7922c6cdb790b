# The oracle of {{ID}}: a reference solution, run as `bash solution/solve.sh`
# in the repeat's workdir. Replace it with one that solves your task.
set -euo pipefail
printf 'status: done\n' > STATUS.md
