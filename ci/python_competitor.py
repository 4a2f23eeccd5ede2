#!/usr/bin/env python3
"""An honest competitor (issue 23, point 4): the benchmark's LibTorch rows against the same calls from a fresh Python
process of the same torch, on the same threads, in the same run.

Rows compared (Google Benchmark names of claimcheck_bench_attention):
  attention/libtorch/<T>    causal fp32 SDPA, B=1 H=8 D=64, against torch.nn.functional.scaled_dot_product_attention
  matmul/libtorch_bf16/<N>  bf16 matmul N^3 (where the benchmark registered it: CPUs with bf16 instructions)

usage:
  python_competitor.py --bench BENCH.json --python PY --out ROWS.json
      the report's rows: each LibTorch row's time over Python's (1 = the benchmark runs the library as fast as it
      runs on its own)
  python_competitor.py --bench-exe claimcheck_bench_attention --python PY --check 0.15 [--rounds 8] [--sample]
      the test: `rounds` interleaved rounds of (the benchmark's LibTorch rows, a fresh Python process), medians;
      --sample: make test's rows (SAMPLE: attention at T = 1024, the bf16 matmul at 2048^3);
      exit 1 where a row's benchmark / Python exceeds 1 + the tolerance (the benchmark handicaps the library); 77
      where there is no LibTorch row to compare."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

# Timed in a fresh interpreter: each call's mean over >= 0.2 s, the best of 3, as the benchmark side is timed (3
# repetitions of >= 0.2 s): the same number of samples on each side, so that neither side's best-of is the luckier.
PY_TIMER = r"""
import json, statistics, sys, time
import torch
threads, rows = int(sys.argv[1]), json.loads(sys.argv[2])
torch.set_num_threads(threads)
def per_call(f):
    f()
    reps = []
    for _ in range(3):
        n, t0 = 0, time.perf_counter()
        while True:
            f(); n += 1
            dt = time.perf_counter() - t0
            if dt >= 0.2: break
        reps.append(dt / n)
    return min(reps)
out = {}
for name in rows:
    kind, arg = name.split("/")[1], int(name.split("/")[2])
    if kind == "libtorch":
        q, k, v = (torch.randn(1, 8, arg, 64) for _ in range(3))
        f = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        a, b = torch.randn(arg, arg).bfloat16(), torch.randn(arg, arg).bfloat16()
        f = lambda: a @ b
    out[name] = per_call(f)
print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "seconds": out}))
"""

WANTED = ("attention/libtorch/1024", "attention/libtorch/4096", "matmul/libtorch_bf16/4096")
# make test's sample: attention at T = 1024 and the bf16 matmul at 2048^3 (41-44 ms a call, 8x less than 4096^3,
# whose 0.35 s calls took a third of the test): the same library calls, so a handicap in how the benchmark makes them
# shows there too. T = 4096 (0.12 s a call, on both sides of every round) is the full stage's.
SAMPLE = ("attention/libtorch/1024", "matmul/libtorch_bf16/2048")


def bench_seconds(data, wanted=WANTED):
    """The best repetition's real time per iteration (seconds) of the LibTorch rows of a Google Benchmark JSON (the
    Python side takes its best too: each side as fast as it runs, a slow phase of a shared VM on neither)."""
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    runs = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        name = b.get("run_name", b["name"]).replace("/real_time", "").replace("/manual_time", "")
        if name in wanted:
            runs.setdefault(name, []).append(b["real_time"] * unit[b.get("time_unit", "ns")])
    return {k: min(v) for k, v in runs.items()}


def python_seconds(py, threads, rows):
    r = subprocess.run([py, "-c", PY_TIMER, str(threads), json.dumps(sorted(rows))], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"python_competitor: {py} could not time the calls: {r.stderr.strip().splitlines()[-1:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def rows_of(cpp, py_res):
    rows = []
    for name, t in sorted(cpp.items()):
        p = py_res["seconds"].get(name)
        if not p:
            continue
        what = ("causal SDPA fp32 B=1 H=8 D=64 T=" + name.split("/")[2] if "attention" in name
                else "bf16 matmul " + name.split("/")[2] + "^3")
        rows.append({"name": f"LibTorch {what}: the benchmark's call vs the same call from Python (torch {py_res['torch']})",
                     "ratio": p / t, "libtorch_ms": t * 1e3, "python_ms": p * 1e3,
                     "short": f"competitor {name}",
                     "detail": f"benchmark {t * 1e3:.2f} ms, Python {p * 1e3:.2f} ms at {py_res['threads']} threads "
                               f"(ratio = Python's time / the benchmark's: 1 when the benchmark runs the library as "
                               f"fast as it runs on its own)"})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench")
    ap.add_argument("--bench-exe")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out")
    ap.add_argument("--check", type=float)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--max-rounds", type=int, default=8)
    ap.add_argument("--sample", action="store_true", help="the test on SAMPLE's rows (make test's), not WANTED's")
    a = ap.parse_args()
    rows = SAMPLE if a.sample else WANTED
    threads = len(os.sched_getaffinity(0))
    if a.bench:
        cpp = bench_seconds(json.load(open(a.bench)))
        rows = rows_of(cpp, python_seconds(a.python, threads, cpp)) if cpp else []
        json.dump(rows, open(a.out, "w"), indent=2)
        for r in rows:
            print(f"{r['name']}: {r['ratio']:.2f}  {r['detail']}")
        return 0
    cpp_runs, py_runs = {}, {}
    def bench_round():
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "bench.json")
            flt = "^(" + "|".join(rows) + ")(/|$)"  # Google Benchmark appends /real_time or /manual_time
            r = subprocess.run([a.bench_exe, f"--benchmark_filter={flt}", "--benchmark_min_time=0.2",
                                "--benchmark_repetitions=3", f"--benchmark_out={out}", "--benchmark_out_format=json"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                sys.exit(f"python_competitor: {a.bench_exe} failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
            return bench_seconds(json.load(open(out)), rows) if os.path.getsize(out) else {}

    wanted = None

    def judge(final):
        """Each row's median round of each side against the bound; prints the rows when final."""
        bad = 0
        for k in sorted(cpp_runs):
            if k not in py_runs:
                continue
            # The median round of each side (each round is already its side's best repetition): this VM's two vCPUs
            # sometimes share one host core for seconds at a time, long enough to slow one side's whole round (T=4096:
            # Python 250 ms against the benchmark's 200 once), and now and then a round runs lucky (Python 165.6 ms
            # where its other seven read 184-243): the best round over eight flipped the verdict both ways (0.889 at
            # T=1024 in a fresh clone's make test, 1.152 at T=4096 in a run here), the medians of two runs here read
            # 0.997-1.037.
            c, p = statistics.median(cpp_runs[k]), statistics.median(py_runs[k])
            # One-sided: the question is whether the benchmark handicaps the library (issue 23: its SDPA row took
            # 119-129 ms where Python took 93-96, 1.25-1.35x); a benchmark row faster than Python's makes the
            # competitor no weaker. The medians of 5 runs of 8 rounds each read 0.909-1.079 here (2-vCPU Zen 3 guest).
            ok = c / p <= 1 + a.check
            bad += not ok
            if final:
                print(f"{'ok ' if ok else 'BAD'} {k}: median rounds: benchmark {c * 1e3:.2f} ms, Python {p * 1e3:.2f} "
                      f"ms (benchmark / Python {c / p:.3f}, allowed up to {1 + a.check:.2f}); rounds in ms: benchmark "
                      f"{[round(x * 1e3, 2) for x in cpp_runs[k]]}, Python {[round(x * 1e3, 2) for x in py_runs[k]]}")
        return bad

    rounds = a.rounds
    rnd = 0
    while rnd < rounds:
        # interleaved: a drift of the machine's speed falls on both sides
        # Which side goes first alternates: a shared VM ran the first second of a loaded process faster than the
        # next ones at times (Python's first calls at T=4096: 164-190 ms, its later ones 194-297).
        for side in ("cpp", "py") if rnd % 2 == 0 else ("py", "cpp"):
            if side == "cpp":
                cpp = bench_round()
                if not cpp:
                    print("python_competitor: the benchmark has no LibTorch row here (built without LibTorch)")
                    return 77
                wanted = wanted or sorted(cpp)
                for k, v in cpp.items():
                    cpp_runs.setdefault(k, []).append(v)
            else:
                res = python_seconds(a.python, threads, wanted or list(rows))
                for k, v in res["seconds"].items():
                    py_runs.setdefault(k, []).append(v)
        rnd += 1
        if rnd == a.rounds < a.max_rounds and judge(False):
            # A sample that reads a handicap is measured again, up to max_rounds, and judged on all its rounds: a
            # slow phase of a shared host that fell on one side's rounds of three (T=4096 118-213 ms a call where it
            # reads 85-89; 1.184 once in a fresh clone's make test, and a pass alone just after) weighs less in a
            # median of eight, while a handicap (1.25-1.35) reads in every round.
            print(f"python_competitor: {a.rounds} rounds read a handicap; measuring {a.max_rounds} in all")
            rounds = a.max_rounds
    return 1 if judge(True) else 0


if __name__ == "__main__":
    sys.exit(main())
