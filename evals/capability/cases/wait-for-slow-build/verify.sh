# Grader: the bundle was built and BUILD_ID holds the checksum it printed.
set -euo pipefail
[ -f out/bundle.txt ] || { echo "out/bundle.txt missing: the build did not finish"; exit 1; }
sum=$(cat src/*.txt | python3 -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')
grep -qx "bundle $sum" out/bundle.txt || { echo "out/bundle.txt is stale"; exit 1; }
[ -f BUILD_ID ] && [ "$(tr -d '[:space:]' < BUILD_ID)" = "$sum" ] || { echo "BUILD_ID does not hold the build checksum"; exit 1; }
echo "bundle ok"
