#!/usr/bin/env python3
"""Turns a Google Benchmark JSON of claimcheck_bench_gpu into the report's benchmark rows (chapter 6 on the GPU,
issue 10's speed targets), all measured in the same run (CUDA events), medians when repetitions were run:
  - the bf16 decode chain (CUDA graph) bytes/s as a share of the read probe's bandwidth (target >= 0.90);
  - the bf16 decode chain against the same chain through cuBLAS, both in CUDA graphs (target >= 1.0, goal 1.19);
    and the two eager (no graph);
  - the NF4 chain's time over the bf16 chain's (target <= 0.30);
  - the causal bf16 attention kernel against LibTorch's CUDA scaled_dot_product_attention (target >= 0.5, goal 0.7);
  - cuBLAS's bf16 GEMM at 8192^3 (the compute roof) in TFLOP/s, and the ridge it makes with the read bandwidth;
  - one Llama layer's GEMMs swept over the batch (1 ... 1024): per-token time at the largest batch over batch 1's,
    and the smallest batch within 5% of the best per-token time (the knee, seen from the sweep).
A benchmark that stopped with an error (no CUDA device) gives no row; with no row at all the output is [].
Each row: name, ratio, detail (and the figures it came from); a ratio of two benchmarks of the same run also its
"samples", the ratio per repetition, which claimcheck compare's U test reads (as for the CPU rows).

usage: bench_gpu_ratios.py BENCH.json OUT.json"""
import sys

from bench_decode_ratios import load_runs, main as write_rows, per_repetition, stats_of  # the same JSON and rows


def rows_from(data):
    runs = load_runs(data)
    ctx = data.get("context", {})
    device = ctx.get("device", "?")
    torch = f"PyTorch {ctx.get('libtorch_version', '?')}"

    med, spread = stats_of(runs)

    rows = []
    read = med("gpu/bandwidth/read", "bytes/s")
    chain = med("gpu/decode/bf16_chain_graph")
    chain_bps = med("gpu/decode/bf16_chain_graph", "bytes/s")
    chain_bytes = med("gpu/decode/bf16_chain_graph", "bytes")
    if chain_bps and read:
        rows.append({"name": "GPU bf16 decode chain (CUDA graph) bytes/s as a share of the read bandwidth",
                     "ratio": chain_bps / read, "chain_ms": chain, "read_gbps": read / 1e9,
                     "spread": spread("gpu/decode/bf16_chain_graph", "gpu/bandwidth/read"),
                     "samples": per_repetition(runs, "gpu/decode/bf16_chain_graph", "gpu/bandwidth/read", "bytes/s",
                                               "bytes/s"),
                     "detail": f"{chain_bytes / 1e9:.2f} GB in {chain:.3f} ms = {chain_bps / 1e12:.2f} TB/s vs the read "
                               f"probe's {read / 1e12:.2f} TB/s on {device} (target >= 0.90)"})
    for mode in ("graph", "eager"):
        ours, blas = med(f"gpu/decode/bf16_chain_{mode}"), med(f"gpu/decode/cublas_chain_{mode}")
        if ours and blas:
            rows.append({"name": f"GPU bf16 decode chain vs the cuBLAS chain ({'CUDA graphs' if mode == 'graph' else 'eager'})",
                         "ratio": blas / ours, "custom_ms": ours, "cublas_ms": blas,
                         "spread": spread(f"gpu/decode/bf16_chain_{mode}", f"gpu/decode/cublas_chain_{mode}"),
                         "samples": per_repetition(runs, f"gpu/decode/cublas_chain_{mode}", f"gpu/decode/bf16_chain_{mode}"),
                         "detail": f"ours {ours:.3f} ms vs cublasGemmEx {blas:.3f} ms per token on {device}"
                                   + (" (target >= 1.0, goal 1.19)" if mode == "graph" else "")})
    nf = med("gpu/decode/nf4_chain_graph")
    nf_bytes = med("gpu/decode/nf4_chain_graph", "bytes")
    if nf and chain:
        rows.append({"name": "GPU NF4 decode chain time / bf16 decode chain time (CUDA graphs)", "ratio": nf / chain,
                     "nf4_ms": nf, "bf16_ms": chain,
                     "bytes_ratio": nf_bytes / chain_bytes if nf_bytes and chain_bytes else None,
                     "spread": spread("gpu/decode/nf4_chain_graph", "gpu/decode/bf16_chain_graph"),
                     "samples": per_repetition(runs, "gpu/decode/nf4_chain_graph", "gpu/decode/bf16_chain_graph"),
                     "detail": f"nf4 {nf:.3f} ms vs bf16 {chain:.3f} ms" +
                               (f"; bytes x{nf_bytes / chain_bytes:.3f}" if nf_bytes and chain_bytes else "") +
                               " (target <= 0.30)"})
    for T in (1024, 4096):
        ours = med(f"gpu/attention/ours_causal_bf16/{T}")
        sdpa = med(f"gpu/attention/sdpa_causal_bf16/{T}")
        fl = med(f"gpu/attention/ours_causal_bf16/{T}", "FLOP/s")
        if ours and sdpa:
            rows.append({"name": f"GPU causal bf16 attention vs {torch} CUDA SDPA, H=32 D=128 T={T}",
                         "ratio": sdpa / ours, "custom_ms": ours, "sdpa_ms": sdpa,
                         "spread": spread(f"gpu/attention/ours_causal_bf16/{T}", f"gpu/attention/sdpa_causal_bf16/{T}"),
                         "samples": per_repetition(runs, f"gpu/attention/sdpa_causal_bf16/{T}",
                                                   f"gpu/attention/ours_causal_bf16/{T}"),
                         "detail": f"ours {ours:.3f} ms ({fl / 1e12:.0f} TFLOP/s) vs SDPA {sdpa:.3f} ms on {device}"
                                   + (" (target >= 0.5, goal 0.7)" if T == 4096 else "")})
    sweep = []
    for name in runs:
        if name.startswith("gpu/sweep/layer_bf16/"):
            sweep.append((int(name.rsplit("/", 1)[1]), med(name), med(name, "FLOP/s")))
    if len(sweep) > 1:
        sweep.sort()
        per_token = [(B, t / B) for B, t, _ in sweep]
        best = min(p for _, p in per_token)
        knee = next(B for B, p in per_token if p <= 1.05 * best)  # the smallest batch within 5% of the best
        rows.append({"name": "GPU Llama layer batch sweep: per-token time at the largest batch / at batch 1",
                     "ratio": per_token[-1][1] / per_token[0][1], "knee_batch": knee,
                     "sweep": [{"B": B, "ms": t, "tflops": f / 1e12} for B, t, f in sweep],
                     "detail": "; ".join(f"B={B}: {f / 1e12:.0f} TFLOP/s" for B, t, f in sweep) +
                               f"; the per-token time within 5% of its best from B={knee} on"})
    peak = med("gpu/gemm/cublas_bf16_8192", "FLOP/s")
    if peak and read:
        rows.append({"name": "GPU ridge: cuBLAS bf16 GEMM 8192^3 over the read bandwidth (FLOP/byte)",
                     "ratio": peak / read, "tflops": peak / 1e12, "read_gbps": read / 1e9,
                     "samples": per_repetition(runs, "gpu/gemm/cublas_bf16_8192", "gpu/bandwidth/read", "FLOP/s",
                                               "bytes/s"),
                     "detail": f"{peak / 1e12:.0f} TFLOP/s over {read / 1e12:.2f} TB/s on {device} (the H100 card's "
                               f"ridge is 295)"})
    return rows


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    write_rows(*sys.argv[1:3], rows_of=rows_from)
