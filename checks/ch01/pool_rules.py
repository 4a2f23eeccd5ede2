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
    COUNTER += 1
    return COUNTER


def main():
    ctx = mp.get_context("spawn")  # what DataLoader workers on macOS/Windows and DDP ranks start with
    planted = fault()
    fn = square if planted == "top_level_everywhere" else (lambda x: x * x)
    try:
        with ctx.Pool(2) as pool:
            pool.map(fn, [1, 2, 3])
        lambda_error = None
    except Exception as e:  # PicklingError or AttributeError, depending on the version
        lambda_error = f"{type(e).__name__}: {e}"
    pool_cls = (lambda n: ThreadPool(n)) if planted == "threads_share_globals" else ctx.Pool
    with pool_cls(2) as pool:
        seen_in_workers = pool.map(bump, range(4))
    parent_unchanged = COUNTER == 0
    emit(measurements=[measurement("value", lambda_error is not None and parent_unchanged, "bool")],
         details={"lambda_error": lambda_error, "worker_counters": seen_in_workers, "parent_counter": COUNTER,
                  "start_method": "spawn", "planted_fault": planted or None},
         assumptions=["spawn start method (fork would copy the lambda's closure and hide the first rule)"])


if __name__ == "__main__":
    main()
