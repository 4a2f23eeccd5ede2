"""ch01.threads_no_speedup: CPU-bound pure-Python preprocessing, serial vs a thread pool of 8."""
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pydriver import emit, fault, gil_enabled, measurement, usable_cpus  # noqa: E402
from cpu_work import best_of_interleaved, chunks, preprocess  # noqa: E402

workers = 8
work = chunks(workers, 15000)
with ThreadPoolExecutor(max_workers=workers) as pool:
    serial, threaded = best_of_interleaved(5, lambda: [preprocess(c) for c in work],
                                           lambda: list(pool.map(preprocess, work)))
gil = gil_enabled()
expected = 1.0 if gil else float(min(usable_cpus(), workers))
emit(measurements=[measurement("value", serial / threaded, "x"),
                   measurement("serial_s", serial, "s"), measurement("threaded_s", threaded, "s")],
     derived=[{"name": "expected_speedup", "value": expected, "unit": "x"}],
     details={"gil_enabled": gil, "usable_cpus": usable_cpus(), "workers": workers, "python": sys.version.split()[0],
              "planted_fault": fault() or None},
     assumptions=["expectation from this interpreter: with the GIL, threads run Python bytecode one at a time "
                  "(1.0x); a free-threaded build would scale with min(cores, workers)"])
