#!/usr/bin/env python3
"""The GPU benchmark rows (ci/bench_gpu_ratios.py, written by the nightly GPU job): every ratio of two benchmarks of
one run carries its per-repetition "samples" (claimcheck compare's U test reads them, as it reads the CPU rows'), each
sample the same quotient as the row's ratio, paired by repetition. Fed a synthetic Google Benchmark JSON of 9
repetitions, so it runs without a GPU.

usage: bench_rows.py --root REPO"""
import argparse
import os
import statistics
import sys

p = argparse.ArgumentParser()
p.add_argument("--root", required=True)
a = p.parse_args()
sys.path.insert(0, os.path.join(a.root, "ci"))
import bench_gpu_ratios  # noqa: E402

REPS = 9


def runs(name, times, **counters):
    """One benchmark's repetitions: times[i] ms for repetition i, and counters scaled alike (bytes/s from bytes)."""
    out = []
    for i, t in enumerate(times):
        b = {"name": name, "run_name": name, "run_type": "iteration", "repetition_index": i, "real_time": t,
             "time_unit": "ms"}
        for k, v in counters.items():
            b[k] = v(t) if callable(v) else v
        out.append(b)
    return out


def jitter(base, i):
    return base * (1 + 0.01 * ((i * 7) % 5 - 2))


read = [jitter(10.0, i) for i in range(REPS)]
bf16 = [jitter(5.0, i + 1) for i in range(REPS)]
cublas = [jitter(5.5, i + 2) for i in range(REPS)]
nf4 = [jitter(1.5, i + 3) for i in range(REPS)]
ours = [jitter(2.0, i) for i in range(REPS)]
sdpa = [jitter(1.2, i + 4) for i in range(REPS)]
gemm = [jitter(3.0, i + 1) for i in range(REPS)]
benchmarks = (runs("gpu/bandwidth/read", read, **{"bytes/s": lambda t: 4e9 / t * 1e3})
              + runs("gpu/decode/bf16_chain_graph", bf16, bytes=1.6e10, **{"bytes/s": lambda t: 1.6e10 / t * 1e3})
              + runs("gpu/decode/cublas_chain_graph", cublas)
              + runs("gpu/decode/nf4_chain_graph", nf4, bytes=4.5e9)
              + runs("gpu/attention/ours_causal_bf16/4096", ours, **{"FLOP/s": 1e15})
              + runs("gpu/attention/sdpa_causal_bf16/4096", sdpa)
              + runs("gpu/gemm/cublas_bf16_8192", gemm, **{"FLOP/s": lambda t: 2 * 8192 ** 3 / t * 1e3}))
rows = bench_gpu_ratios.rows_from({"context": {"device": "test"}, "benchmarks": benchmarks})
bad = 0
for r in rows:
    s = r.get("samples")
    if s is None:
        if "sweep" not in r:  # the batch sweep's ratio is one figure of many benchmarks, not a pair's
            print(f"FAIL {r['name']}: no samples")
            bad += 1
        continue
    if len(s) != REPS:
        print(f"FAIL {r['name']}: {len(s)} samples, {REPS} repetitions")
        bad += 1
        continue
    med = statistics.median(s)
    # The samples are the row's quotient: their median within the jitter of the ratio (an inverted pair reads 1/x).
    if abs(med / r["ratio"] - 1) > 0.05:
        print(f"FAIL {r['name']}: samples' median {med:.4g} against the ratio {r['ratio']:.4g}")
        bad += 1
    else:
        print(f"ok   {r['name']}: {REPS} samples, median {med:.4g} (ratio {r['ratio']:.4g})")
# A row whose timed output did not match its reference (SkipWithError) is an error, never a ratio: the writers of
# the rows (this one and the CPU ones, which share bench_decode_ratios.main) exit 2 naming the file and the row.
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
with tempfile.TemporaryDirectory() as d:
    src = os.path.join(d, "bench.json")
    with open(src, "w") as f:
        json.dump({"context": {}, "benchmarks": [{"name": "gemv/bf16/14336x4096/real_time", "run_type": "iteration",
                   "error_occurred": True, "error_message": "bf16 GEMV: the timed output does not match"}]}, f)
    for script in ("bench_decode_ratios.py", "bench_ratios.py", "bench_gpu_ratios.py"):
        r = subprocess.run([sys.executable, os.path.join(a.root, "ci", script), src, os.path.join(d, "out.json")],
                           capture_output=True, text=True)
        ok = (r.returncode == 2 and "gemv/bf16/14336x4096" in r.stderr and "does not match" in r.stderr
              and len(r.stderr.strip().splitlines()) == 1 and not os.path.exists(os.path.join(d, "out.json")))
        print(f"{'ok  ' if ok else 'FAIL'} {script}: an errored row -> exit {r.returncode}: {r.stderr.strip()[:160]}")
        bad += 0 if ok else 1
names = " ".join(r["name"] for r in rows)
for want in ("share of the read bandwidth", "cuBLAS chain", "NF4 decode chain", "attention", "ridge"):
    if want not in names:
        print(f"FAIL no row for {want!r}")
        bad += 1
sys.exit(1 if bad else 0)
