# Grader: report.py prints per-region totals, largest first (ties by name),
# two decimals, on data it has never seen as well as on sales.csv.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/s.csv" <<'CSV'
region,product,quantity,unit_price
west,a,2,1.25
east,b,1,4.00
west,c,1,0.50
north,d,3,0.25
south,e,1,0.75
CSV
got=$(python3 report.py "$tmp/s.csv")
want=$(printf 'east: 4.00\nwest: 3.00\nnorth: 0.75\nsouth: 0.75')
[ "$got" = "$want" ] || { printf 'report printed:\n%s\nexpected:\n%s\n' "$got" "$want"; exit 1; }
got=$(python3 report.py sales.csv)
want=$(printf 'north: 27.50\neast: 10.00\nsouth: 7.50')
[ "$got" = "$want" ] || { printf 'report on sales.csv printed:\n%s\nexpected:\n%s\n' "$got" "$want"; exit 1; }
echo "report ok"
