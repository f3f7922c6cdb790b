# Grader: --top N limits the output to the N most frequent words; without it
# every word is printed as before.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'b a c a b a d\n' > "$tmp/t.txt"
all=$(python3 wordfreq.py "$tmp/t.txt")
[ "$all" = "$(printf '3 a\n2 b\n1 c\n1 d')" ] || { echo "output without --top changed: $all"; exit 1; }
top=$(python3 wordfreq.py --top 2 "$tmp/t.txt")
[ "$top" = "$(printf '3 a\n2 b')" ] || { echo "--top 2 printed: $top"; exit 1; }
one=$(python3 wordfreq.py "$tmp/t.txt" --top 1)
[ "$one" = "3 a" ] || { echo "--top 1 printed: $one"; exit 1; }
echo "wordfreq ok"
