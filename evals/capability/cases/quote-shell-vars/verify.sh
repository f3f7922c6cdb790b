# Grader: backup.sh copies files whose names contain spaces, and still copies
# plain ones.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src dir"
echo one > "$tmp/src dir/plain.txt"
echo two > "$tmp/src dir/my notes.txt"
cp backup.sh "$tmp/"
(cd "$tmp" && bash backup.sh "src dir" >/dev/null)
[ "$(cat "$tmp/backup/plain.txt")" = one ] || { echo "plain.txt not copied"; exit 1; }
[ "$(cat "$tmp/backup/my notes.txt")" = two ] || { echo "'my notes.txt' not copied"; exit 1; }
echo "backup ok"
