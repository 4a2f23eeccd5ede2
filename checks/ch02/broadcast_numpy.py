"""Driver for ch02.broadcast_silent: numpy broadcasts (3,) + (3, 1) to (3, 3) without a word."""
import json

try:
    import numpy as np
except ImportError as e:
    print(json.dumps({"details": {"skipped": f"numpy not importable: {e}"}}))
    raise SystemExit(0)

a, b = np.ones(3), np.ones((3, 1))
c = a + b
try:
    assert c.shape == a.shape, f"expected {a.shape}, got {c.shape}"
    caught = False
except AssertionError:
    caught = True
print(json.dumps({"details": {"shape": list(c.shape), "raised": False, "assertion_caught": caught,
                              "numpy": np.__version__}}))
