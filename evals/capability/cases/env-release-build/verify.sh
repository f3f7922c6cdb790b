# Grader: dist/app.txt is a release build of the current src/app.py.
set -euo pipefail
[ -f dist/app.txt ] || { echo "dist/app.txt missing: run the build"; exit 1; }
grep -qx "mode=release" dist/app.txt || { echo "dist/app.txt is not a release build"; exit 1; }
sum=$(python3 -c 'import hashlib; print(hashlib.sha256(open("src/app.py", "rb").read()).hexdigest())')
grep -qx "checksum=$sum" dist/app.txt || { echo "dist/app.txt is stale"; exit 1; }
echo "release build ok"
