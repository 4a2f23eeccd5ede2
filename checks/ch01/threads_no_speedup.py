"""ch01.threads_no_speedup: CPU-bound pure-Python preprocessing, serial vs a thread pool of 8."""
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pydriver import emit, fault, gil_enabled, measurement, usable_cpus  # noqa: E402
from cpu_work import best_of_interleaved, chunks, preprocess  # noqa: E402

workers = 8
work = chunks(workers, 15000)
totals = {"serial": set(), "threads": set()}
idents = set()  # the threads the pool runs its tasks on
timed_idents = set()  # the threads the timed runs' tasks ran on
# A planted fault: the pool is handed all chunks but the first.
mapped = work[1:] if fault() == "pool_drops_chunk" else work


def meet(barrier):
    """A warm-up task: each waits until `workers` tasks wait together, which only as many threads can do (a thread
    waiting here takes no other task); a pool of fewer times out (a broken barrier) and shows fewer threads."""
    idents.add(threading.get_ident())  # (a set's add is atomic under the GIL and with it)
    try:
        barrier.wait(timeout=5)
    except threading.BrokenBarrierError:
        pass


def task(chunk):
    """A timed task: preprocess, noting the thread it ran on (the pool's, not the caller's)."""
    timed_idents.add(threading.get_ident())
    return preprocess(chunk)


def threaded_run(pool):
    # Each chunk's result in the chunks' order (pool.map keeps it): a pool that loses, repeats or reorders one differs.
    # A planted fault runs the timed tasks on the calling thread (the builtin map): as fast under the GIL, no pool.
    if fault() == "threads_timed_serial":
        return tuple(map(task, mapped))
    return tuple(pool.map(task, mapped))


# A planted fault: a pool of one thread, which under the GIL runs as fast as eight.
with ThreadPoolExecutor(max_workers=1 if fault() == "one_thread_pool" else workers) as pool:
    meeting = threading.Barrier(workers)
    list(pool.map(meet, [meeting] * workers))
    serial, threaded = best_of_interleaved(5, lambda: totals["serial"].add(tuple(preprocess(c) for c in work)),
                                           lambda: totals["threads"].add(threaded_run(pool)))
gil = gil_enabled()
expected = 1.0 if gil else float(min(usable_cpus(), workers))
emit(measurements=[measurement("value", serial / threaded, "x"),
                   # What the timed runs computed: the pool's results, chunk by chunk in order, are the serial run's.
                   measurement("pool_results_differ", float(totals["threads"] != totals["serial"]
                                                            or len(totals["serial"]) != 1), "count"),
                   # The threads the pool holds (met at the warm-up's barrier): the series' pool of 8; none where
                   # a timed task ran on another thread (the caller's: then the timed run had no pool).
                   measurement("pool_threads", float(len(idents) if timed_idents and timed_idents <= idents
                                                     and threading.get_ident() not in timed_idents else 0), "count"),
                   measurement("serial_s", serial, "s"), measurement("threaded_s", threaded, "s")],
     derived=[{"name": "expected_speedup", "value": expected, "unit": "x"}],
     details={"gil_enabled": gil, "usable_cpus": usable_cpus(), "workers": workers, "python": sys.version.split()[0],
              "planted_fault": fault() or None},
     assumptions=["expectation from this interpreter: with the GIL, threads run Python bytecode one at a time "
                  "(1.0x); a free-threaded build would scale with min(cores, workers)"])
