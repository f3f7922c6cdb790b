# Grader: page() and page_count() behave as documented (own checks; the
# fixture's tests could have been edited).
set -euo pipefail
python3 - <<'PY'
from pager import page, page_count

items = list(range(10))
assert page(items, 1, 3) == [0, 1, 2], page(items, 1, 3)
assert page(items, 2, 3) == [3, 4, 5], page(items, 2, 3)
assert page(items, 4, 3) == [9], page(items, 4, 3)
assert page(items, 5, 3) == [], page(items, 5, 3)
assert page_count(items, 3) == 4, page_count(items, 3)
assert page_count(list(range(9)), 3) == 3
assert page_count([], 3) == 0
print("pager ok")
PY
