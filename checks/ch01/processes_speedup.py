"""ch01.processes_speedup: the same CPU-bound work, serial vs a process pool of 8."""
import os
import sys
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pydriver import emit, fault, measurement, usable_cpus  # noqa: E402
from cpu_work import best_of_interleaved, chunks, preprocess  # noqa: E402

workers = 8
work = chunks(workers, 15000)
pool_workers = 1 if fault() == "serial_pool" else workers  # a planted fault: a pool of one
with ProcessPoolExecutor(max_workers=pool_workers) as pool:
    list(pool.map(preprocess, work[:pool_workers]))  # start the workers before timing
    serial, parallel = best_of_interleaved(5, lambda: [preprocess(c) for c in work],
                                           lambda: list(pool.map(preprocess, work)))
ideal = float(min(usable_cpus(), workers))
emit(measurements=[measurement("value", serial / parallel, "x"),
                   measurement("serial_s", serial, "s"), measurement("processes_s", parallel, "s")],
     derived=[{"name": "ideal_speedup", "value": ideal, "unit": "x"}],
     details={"usable_cpus": usable_cpus(), "workers": workers, "planted_fault": fault() or None},
     assumptions=["ideal speed-up = min(usable cores, workers); pickling the chunks and results costs a little"])
