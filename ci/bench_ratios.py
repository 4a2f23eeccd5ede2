#!/usr/bin/env python3
"""Turns a Google Benchmark JSON (claimcheck_bench_attention) into the report's benchmark rows:
speed-up of each custom attention version over PyTorch's at::scaled_dot_product_attention at equal threads
(the torch version and the CPU kernel ATen picked are in the benchmark's context), measured in the same run,
and GFLOP/s (the report holds it against the roof ch06.ridge_measured's probe measured in the same run: one probe
for every table). Medians when repetitions were run.

usage: bench_ratios.py BENCH.json OUT.json"""
import json
import statistics
import sys

from bench_decode_ratios import per_repetition, refuse_errors  # as the decode rows have them


def main(src, dst):
    with open(src) as f:
        data = json.load(f)
    refuse_errors(data, src)
    runs = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b["run_name"] if "run_name" in b else b["name"]
        name = name.replace("/real_time", "").replace("/manual_time", "")
        runs.setdefault(name, []).append(b)

    def med(name, key):
        vals = [r[key] for r in runs.get(name, [])]
        return statistics.median(vals) if vals else None

    def spread(name):
        vals = [r["real_time"] for r in runs.get(name, [])]
        return (max(vals) - min(vals)) / statistics.median(vals) if len(vals) > 1 else 0.0

    peak = med("fma_peak", "FLOP/s")
    ctx = data.get("context", {})
    rows = []
    for T in (256, 1024, 4096):
        lib = med(f"attention/libtorch/{T}", "real_time")
        lib_name = f"PyTorch {ctx.get('libtorch_version', '?')} SDPA ({ctx.get(f'libtorch_kernel_T{T}', '?')} kernel)"
        for v in ("v1_plain", "v2_tiled", "v3_register"):
            name = f"attention/{v}/{T}"
            t = med(name, "real_time")
            if t is None or lib is None:
                continue
            flops = med(name, "FLOP/s")
            rows.append({
                "name": f"causal attention fp32 {v} vs {lib_name}, B=1 H=8 D=64 T={T}",
                "ratio": lib / t,
                "custom_ms": t, "libtorch_ms": lib,
                "gflops": flops / 1e9,
                # q, k, v read and out written once (fp32, B=1 H=8 D=64): the roofline's compulsory bytes
                "intensity": 4.0 * 8 * 64 * T * (T + 1) / 2 / (4 * 8 * T * 64 * 4),
                "short": f"attention {v} T={T}",
                "spread": max(spread(name), spread(f"attention/libtorch/{T}")),
                "samples": per_repetition(runs, f"attention/libtorch/{T}", name),
                "detail": (f"{v} {t:.2f} ms vs {lib_name} {lib:.2f} ms at {ctx.get('threads', '?')} threads; "
                           f"{flops / 1e9:.1f} GFLOP/s ({ctx.get('simd_path', '?')}"
                           + (f"; v3's tile: {ctx['v3_path']}" if v == "v3_register" and "v3_path" in ctx else "")
                           + ")"),
            })
    # The bf16 matmul at 4096^3 against LibTorch's (oneDNN: AMX or avx512_bf16 where the CPU has them), registered on
    # CPUs with bf16 instructions; the row names the engine the project's kernel ran on.
    # (matmul/custom_bf16_dot: the vdpbf16ps engine's own row, on a CPU whose matmul picks AMX)
    for name in sorted(n for n in runs if n.startswith(("matmul/custom_bf16/", "matmul/custom_bf16_dot/"))):
        n = name.split("/")[2]
        t, lib = med(name, "real_time"), med(f"matmul/libtorch_bf16/{n}", "real_time")
        if t is None or lib is None:
            continue
        engine = (runs[name][0].get("label") or ctx.get("matmul_engine") or "?")
        flops = med(name, "FLOP/s")
        lib_flops = med(f"matmul/libtorch_bf16/{n}", "FLOP/s")
        rows.append({
            "name": f"bf16 matmul {n}^3 on {engine} vs PyTorch {ctx.get('libtorch_version', '?')} bf16 matmul (oneDNN), "
                    "equal threads",
            "ratio": lib / t, "custom_ms": t, "libtorch_ms": lib, "gflops": flops / 1e9 if flops else None,
            "engine": engine, "short": f"bf16 matmul {n}^3 ({engine})",
            "spread": max(spread(name), spread(f"matmul/libtorch_bf16/{n}")),
            "samples": per_repetition(runs, f"matmul/libtorch_bf16/{n}", name),
            "detail": (f"{engine} {t:.1f} ms ({flops / 1e12:.2f} TFLOP/s) vs oneDNN {lib:.1f} ms "
                       f"({lib_flops / 1e12:.2f} TFLOP/s) at {ctx.get('threads', '?')} threads"
                       if flops and lib_flops else ""),
        })
    if peak:
        # The claims' FMA probe run again among the benchmarks (bench/verify.h), held against the claims' own run in the
        # report's share column: how far the machine moved between the two.
        rows.append({"name": "the fp32 FMA probe, run among the benchmarks", "ratio": 1.0, "gflops": peak / 1e9,
                     "detail": f"{peak / 1e9:.0f} GFLOP/s on {ctx.get('threads', '?')} threads ({ctx.get('simd_path', '?')})"})
    with open(dst, "w") as f:
        json.dump(rows, f, indent=2)
    for r in rows:
        print(f"{r['name']}: {r['ratio']:.2f}x  {r['detail']}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
