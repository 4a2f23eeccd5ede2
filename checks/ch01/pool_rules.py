"""ch01.pool_rules: Pool.map needs a top-level function; a worker's globals are copies."""
import multiprocessing as mp
import os
import sys
from multiprocessing.pool import ThreadPool

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pydriver import emit, fault, measurement  # noqa: E402

COUNTER = 0


def square(x):
    return x * x


def bump(_):
    global COUNTER
    if fault() != "bump_no_write":  # (a planted fault: the worker reads its global and never writes it)
        COUNTER += 1
        return os.getpid(), COUNTER
    return os.getpid(), COUNTER + 1


def divides_by_zero(x):
    return x / 0


def main():
    ctx = mp.get_context("spawn")  # what DataLoader workers on macOS/Windows and DDP ranks start with
    planted = fault()
    # (Planted faults: a top-level function everywhere; a function that fails for another reason than pickling.)
    fn = square if planted == "top_level_everywhere" else divides_by_zero if planted == "other_error" else (
        lambda x: x * x)
    try:
        with ctx.Pool(2) as pool:
            pool.map(fn, [1, 2, 3])
        lambda_error = None
    except Exception as e:  # PicklingError or AttributeError, depending on the version
        lambda_error = f"{type(e).__name__}: {e}"
        pickling = type(e).__name__ in ("PicklingError", "AttributeError") and (
            "pickle" in str(e).lower() or "lambda" in str(e).lower())
    else:
        pickling = False
    pool_cls = (lambda n: ThreadPool(n)) if planted == "threads_share_globals" else ctx.Pool
    with pool_cls(2) as pool:
        seen = pool.map(bump, range(4))
    parent_unchanged = COUNTER == 0
    # Each worker's writes land in its own copy: the counters a worker returned run 1, 2, ... over its own calls (two
    # workers and four calls: one of them made two at least), while the parent's stays 0.
    by_pid = {}
    for pid, c in seen:
        by_pid.setdefault(pid, []).append(c)
    workers_wrote = all(sorted(v) == list(range(1, len(v) + 1)) for v in by_pid.values()) and any(
        len(v) > 1 for v in by_pid.values())
    seen_in_workers = [c for _, c in seen]
    emit(measurements=[measurement("value", lambda_error is not None and parent_unchanged, "bool"),
                       measurement("workers_wrote", workers_wrote, "bool"),
                       measurement("lambda_pickling_error", pickling, "bool")],
         details={"lambda_error": lambda_error, "worker_counters": seen_in_workers, "parent_counter": COUNTER,
                  "start_method": "spawn", "planted_fault": planted or None},
         assumptions=["spawn start method (fork would copy the lambda's closure and hide the first rule)"])


if __name__ == "__main__":
    main()
