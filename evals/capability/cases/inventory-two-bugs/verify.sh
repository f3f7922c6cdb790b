# Grader: Stock.remove refuses to go negative (and changes nothing then);
# discounts reduce the price.
set -euo pipefail
python3 - <<'PY'
from inventory.pricing import discounted, order_total
from inventory.stock import Stock

s = Stock()
s.add("bolt", 5)
s.remove("bolt", 2)
assert s.on_hand("bolt") == 3, s.on_hand("bolt")
try:
    s.remove("bolt", 4)
except ValueError:
    pass
else:
    raise AssertionError("removing more than on hand did not raise ValueError")
assert s.on_hand("bolt") == 3, "a refused remove changed the stock"
try:
    s.remove("nut", 1)
except ValueError:
    pass
else:
    raise AssertionError("removing an unknown item did not raise ValueError")
assert discounted(100.0, 10) == 90.0, discounted(100.0, 10)
assert discounted(19.99, 0) == 19.99
assert order_total([(2, 5.0), (1, 10.0)], 25) == 15.0
assert order_total([(3, 1.1)]) == 3.3
print("inventory ok")
PY
