"""ch01.processes_speedup: the same CPU-bound work, serial vs a process pool of 8.

Two figures, both against min(usable cores, workers):
- the wall-clock speed-up (the series' figure): serial time is one warm worker process doing all the work (the
  driver's own process read up to 1.4x slower than its children here, a freshly forked one 1.2-1.3x slower than a
  warm one); on this shared VM the CPU's own speed moved by up to 25% between runs of the same work, so a
  speed-up read in one run is loose;
- the concurrency the pool achieved: CPU seconds its workers spent on the chunks (each task times itself with
  process_time) per wall second of the pool's run. It is immune to that drift: 1.85-1.93 for 8 workers on
  2 cores here, 0.98-0.99 for a pool of one (the planted fault)."""
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pydriver import emit, fault, measurement, usable_cpus  # noqa: E402
from cpu_work import best_of_interleaved, chunks, preprocess  # noqa: E402

workers = 8
cpus = usable_cpus()
work = chunks(workers, 15000)
pool_workers = 1 if fault() == "serial_pool" else workers  # a planted fault: a pool of one
# A planted fault: the pool capped at the usable cores (where there are fewer than 8, a different pool).
if fault() == "pool_capped_at_cores":
    pool_workers = min(workers, cpus)
# A planted fault: the pool's chunks are sized for one process (items per chunk not divided among the workers),
# so the pool does `workers` times the serial work.
pool_work = chunks(workers, 15000 * workers) if fault() == "chunks_not_divided" else work


def timed(chunk):
    t = time.process_time()
    result = preprocess(chunk)
    return time.process_time() - t, result, os.getpid()


def run_all():
    return tuple(preprocess(c) for c in work)


if __name__ == "__main__":
    concurrency, totals, pids = [], {"serial": set(), "pool": set()}, set()
    # A planted fault: the pool is handed all chunks but the first.
    mapped = pool_work[1:] if fault() == "pool_drops_chunk" else pool_work

    def pooled():
        t = time.perf_counter()
        done = list(pool.map(timed, mapped))
        concurrency.append(sum(c for c, _, _ in done) / (time.perf_counter() - t))
        totals["pool"].add(tuple(r for _, r, _ in done))  # each chunk's result, in the chunks' order
        pids.update(p for _, _, p in done)

    def serial_run():
        totals["serial"].add(one.submit(run_all).result())

    with ProcessPoolExecutor(max_workers=1) as one, ProcessPoolExecutor(max_workers=pool_workers) as pool:
        for ex, n in ((one, 1), (pool, pool_workers)):
            list(ex.map(preprocess, work[:n]))  # start the workers before timing
        serial, parallel = best_of_interleaved(7, serial_run, pooled)
    ideal = float(min(cpus, workers))
    emit(measurements=[measurement("value", serial / parallel, "x"),
                       measurement("concurrency", sorted(concurrency)[len(concurrency) // 2], "x"),
                       # What the timed runs computed: the pool's results, chunk by chunk in order, are the serial
                       # run's (a pool that loses, repeats or reorders a chunk differs).
                       measurement("pool_results_differ", float(totals["pool"] != totals["serial"]
                                                                or len(totals["serial"]) != 1), "count"),
                       # The processes that ran the pool's tasks over every round: the series' pool of 8.
                       measurement("pool_processes", float(len(pids)), "count"),
                       measurement("serial_s", serial, "s"), measurement("processes_s", parallel, "s")],
         derived=[{"name": "ideal_speedup", "value": ideal, "unit": "x"}],
         details={"usable_cpus": cpus, "workers": workers, "concurrency_per_round": concurrency,
                  "totals": {k: sorted(v) for k, v in totals.items()},
                  "planted_fault": fault() or None},
         assumptions=["ideal speed-up = min(usable cores, workers)",
                      "serial = one warm worker process doing all the work; pickling chunks and results costs the "
                      "pool a little",
                      "concurrency = CPU seconds of the pool's tasks per wall second of its run (median of 7 rounds)"])
