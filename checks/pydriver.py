"""The result protocol of Python drivers (read by claimcheck::run_python_driver / forward_driver_result):
the driver prints one JSON object as its last line of stdout. A driver that is a claim's whole check is named in
its expected file (`driver`: script, args, derives), with no C++ wrapper."""
import json
import os
import sys


def measurement(name, value, unit):
    return {"name": name, "value": value, "unit": unit}


def emit(measurements=(), derived=(), details=None, assumptions=(), alternatives=(), pending=(), skip=None):
    out = {"measurements": list(measurements), "derived": list(derived), "details": details or {},
           "assumptions": list(assumptions), "alternatives": list(alternatives), "pending": list(pending)}
    if skip:
        out["skip"] = skip
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def fault():
    """A fault planted by a test ($CLAIMCHECK_FAULT), "" in normal runs."""
    return os.environ.get("CLAIMCHECK_FAULT", "")


def usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def gil_enabled():
    f = getattr(sys, "_is_gil_enabled", None)
    return True if f is None else bool(f())
