#!/usr/bin/env python3
"""Turns a Google Benchmark JSON of claimcheck_bench_decode into the report's benchmark rows (chapter 6: decode
is memory-bound, time per token = weight bytes / bandwidth; 4-bit weights read ~1/4 of the bytes in ~1/4 of the
time), all measured in the same run, medians when repetitions were run:
  - the bf16 decode chain's (and each bf16 GEMV's) achieved bytes/s as a share of the read bandwidth (the roofline
    probe's read-only reduction, bandwidth/read); the chain's from decode/bf16_chain_vs_read's pairs (a probe pass
    and a decode step back to back) where that ran;
  - the bf16 chain (and GEMVs) against LibTorch's bf16 at::matmul over the same weights at equal threads;
  - the NF4 chain's time over the bf16 chain's (bytes ratio in the detail);
  - the batched bf16 GEMM's GFLOP/s and time per token across the batch sweep.
Each row: name, ratio, detail (and the figures it came from).

usage: bench_decode_ratios.py BENCH.json OUT.json"""
import json
import re
import statistics
import sys


def refuse_errors(data, src):
    """A benchmark whose timed output did not match its reference (or that stopped otherwise) is an error, not a
    ratio: one line naming the file and the row, exit 2."""
    for b in data.get("benchmarks", []):
        if b.get("error_occurred"):
            print(f"{src}: field 'benchmarks[{b.get('name')}]': {b.get('error_message', 'stopped with an error')}",
                  file=sys.stderr)
            sys.exit(2)


def load_runs(data):
    """Each benchmark's repetitions by name (suffixes dropped); aggregates and runs that stopped with an error left
    out (ci/bench_gpu_ratios.py uses it too)."""
    runs = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        name = b["run_name"] if "run_name" in b else b["name"]
        for suffix in ("/real_time", "/manual_time"):
            name = name.replace(suffix, "")
        name = re.sub(r"/iterations:\d+", "", name)
        runs.setdefault(name, []).append(b)
    return runs


def per_repetition(runs, num, den, key_num="real_time", key_den="real_time"):
    """The ratio num / den of each repetition (paired by repetition_index, else by order): the row's "samples",
    which claimcheck compare's U test reads."""
    def by_rep(name, key):
        rs = [r for r in runs.get(name, []) if key in r]
        return [r[key] for r in sorted(rs, key=lambda r: r.get("repetition_index", 0))]
    a, b = by_rep(num, key_num), by_rep(den, key_den)
    return [x / y for x, y in zip(a, b) if y]


def stats_of(runs):
    """med(name, key="real_time"): the median of a figure over a benchmark's repetitions (None if it has none);
    spread(*names): the largest (max - min) / median of their times (ci/bench_gpu_ratios.py uses both too)."""
    def med(name, key="real_time"):
        vals = [r[key] for r in runs.get(name, []) if key in r]
        return statistics.median(vals) if vals else None

    def spread(*names):
        out = 0.0
        for n in names:
            vals = [r["real_time"] for r in runs.get(n, [])]
            if len(vals) > 1:
                out = max(out, (max(vals) - min(vals)) / statistics.median(vals))
        return out
    return med, spread


def rows_from(data):
    runs = load_runs(data)
    ctx = data.get("context", {})
    threads = ctx.get("threads", "?")
    lib_name = f"PyTorch {ctx.get('libtorch_version', '?')} bf16 at::matmul"

    med, spread = stats_of(runs)

    rows = []
    bw = med("bandwidth/read", "bytes/s")
    bf = med("decode/bf16_chain", "real_time")
    bf_bps = med("decode/bf16_chain", "bytes/s")
    bf_bytes = med("decode/bf16_chain", "bytes")
    paired = [r["read_share"] for r in runs.get("decode/bf16_chain_vs_read", []) if "read_share" in r]
    if paired:
        # Each repetition's median over (probe pass, decode step) pairs run back to back; the row is their median.
        share = statistics.median(paired)
        pairs = int(sum(r.get("pairs", 0) for r in runs["decode/bf16_chain_vs_read"]))
        rows.append({
            "name": "bf16 decode chain bytes/s as a share of the read bandwidth",
            "ratio": share, "paired": True, "pairs": pairs, "chain_ms": bf, "read_gbps": bw / 1e9 if bw else None,
            "spread": (max(paired) - min(paired)) / share if len(paired) > 1 and share else 0.0,
            "samples": paired,
            "detail": (f"median of {pairs} read-probe pass / decode step pairs run back to back; repetitions' "
                       f"medians {', '.join(f'{p:.2f}' for p in paired)}"
                       + (f"; unpaired: {bf_bytes / 1e6:.0f} MB in {bf:.1f} ms = {bf_bps / 1e9:.1f} GB/s vs the read "
                          f"bandwidth {bw / 1e9:.1f} GB/s" if bf_bps and bw else "")
                       + f" ({threads} threads, {ctx.get('simd_path', '?')})"),
        })
    elif bf_bps and bw:
        rows.append({
            "name": "bf16 decode chain bytes/s as a share of the read bandwidth",
            "ratio": bf_bps / bw, "gbps": bf_bps / 1e9, "read_gbps": bw / 1e9, "chain_ms": bf,
            "spread": spread("decode/bf16_chain", "bandwidth/read"),
            "samples": per_repetition(runs, "decode/bf16_chain", "bandwidth/read", "bytes/s", "bytes/s"),
            "detail": (f"{bf_bytes / 1e6:.0f} MB of weights in {bf:.1f} ms = {bf_bps / 1e9:.1f} GB/s vs the read "
                       f"bandwidth {bw / 1e9:.1f} GB/s ({threads} threads, {ctx.get('simd_path', '?')})"),
        })
    lib = med("decode/libtorch_bf16_chain", "real_time")
    if bf and lib:
        rows.append({
            "name": f"bf16 decode chain vs {lib_name} chain, equal threads",
            "ratio": lib / bf, "custom_ms": bf, "libtorch_ms": lib,
            "spread": spread("decode/bf16_chain", "decode/libtorch_bf16_chain"),
            "samples": per_repetition(runs, "decode/libtorch_bf16_chain", "decode/bf16_chain"),
            "detail": f"custom {bf:.1f} ms vs {lib_name} {lib:.1f} ms per token at {threads} threads",
        })
    nf = med("decode/nf4_chain", "real_time")
    nf_bytes = med("decode/nf4_chain", "bytes")
    if bf and nf:
        rows.append({
            "name": "NF4 decode chain time / bf16 decode chain time",
            "ratio": nf / bf, "nf4_ms": nf, "bf16_ms": bf,
            "bytes_ratio": nf_bytes / bf_bytes if nf_bytes and bf_bytes else None,
            "spread": spread("decode/bf16_chain", "decode/nf4_chain"),
            "samples": per_repetition(runs, "decode/nf4_chain", "decode/bf16_chain"),
            "detail": (f"nf4 {nf:.1f} ms vs bf16 {bf:.1f} ms; bytes {nf_bytes / 1e6:.0f} MB vs {bf_bytes / 1e6:.0f} MB "
                       f"(x{nf_bytes / bf_bytes:.2f}); nf4 reads at {nf_bytes / nf / 1e6:.1f} GB/s"
                       if nf_bytes and bf_bytes else ""),
        })
    if bf and nf and nf_bytes and bf_bytes:
        # The NF4 kernel at memory speed (issue 34): its time per byte over the bf16 chain's, 1 where both read at
        # the same rate; the repetitions' ratios as the samples.
        byte_ratio = nf_bytes / bf_bytes
        rows.append({
            "name": "NF4 decode chain time over its bytes / bf16 decode chain's",
            "ratio": nf / bf / byte_ratio, "nf4_ms": nf, "bf16_ms": bf, "bytes_ratio": byte_ratio,
            "spread": spread("decode/bf16_chain", "decode/nf4_chain"),
            "samples": [x / byte_ratio for x in per_repetition(runs, "decode/nf4_chain", "decode/bf16_chain")],
            "detail": (f"nf4 {nf_bytes / nf / 1e6:.1f} GB/s vs bf16 {bf_bytes / bf / 1e6:.1f} GB/s from memory "
                       f"({threads} threads, {ctx.get('simd_path', '?')}); 1 = the bytes' ratio"),
        })
    cached = "gemv/nf4_cached/1024x4096"
    cw = med(cached, "FLOP/s")
    cb = med(cached, "bytes/s")
    if cw and cb and bw:
        # From cache: the weights/s the NF4 kernel dequantises and multiplies (FLOP/s / 2) over the weights/s the
        # read bandwidth brings at NF4's bytes per weight: above 1, memory and not the kernel bounds NF4 decode.
        bytes_per_weight = cb / (cw / 2)
        rows.append({
            "name": "NF4 GEMV from cache: weights/s over what the read bandwidth brings",
            "ratio": (cw / 2) / (bw / bytes_per_weight), "gweights_s": cw / 2 / 1e9, "gbps": cb / 1e9,
            "samples": [(r["FLOP/s"] / 2) / (b["bytes/s"] / bytes_per_weight) for r, b in
                        zip(sorted(runs.get(cached, []), key=lambda r: r.get("repetition_index", 0)),
                            sorted(runs.get("bandwidth/read", []), key=lambda r: r.get("repetition_index", 0)))],
            "detail": (f"1024 x 4096 from cache: {cw / 2 / 1e9:.1f} G weights/s ({cb / 1e9:.1f} GB/s of NF4) vs the "
                       f"read bandwidth's {bw / bytes_per_weight / 1e9:.1f} G weights/s ({threads} threads, "
                       f"{ctx.get('simd_path', '?')})"),
        })
    for shape in ("14336x4096", "4096x14336"):
        g = med(f"gemv/bf16/{shape}", "real_time")
        gb = med(f"gemv/bf16/{shape}", "bytes/s")
        gl = med(f"gemv/libtorch_bf16/{shape}", "real_time")
        gn = med(f"gemv/nf4/{shape}", "real_time")
        if g and gb and bw:
            rows.append({"name": f"bf16 GEMV {shape} bytes/s as a share of the read bandwidth", "ratio": gb / bw,
                         "gbps": gb / 1e9,
                         "samples": per_repetition(runs, f"gemv/bf16/{shape}", "bandwidth/read", "bytes/s", "bytes/s"), "detail": f"{g:.2f} ms = {gb / 1e9:.1f} GB/s vs {bw / 1e9:.1f} GB/s"})
        if g and gl:
            rows.append({"name": f"bf16 GEMV {shape} vs {lib_name}, equal threads", "ratio": gl / g,
                         "custom_ms": g, "libtorch_ms": gl,
                         "samples": per_repetition(runs, f"gemv/libtorch_bf16/{shape}", f"gemv/bf16/{shape}"), "detail": f"custom {g:.2f} ms vs {gl:.2f} ms"})
        if g and gn:
            nb = med(f"gemv/nf4/{shape}", "bytes/s")
            rows.append({"name": f"NF4 GEMV {shape} time / bf16 GEMV time", "ratio": gn / g,
                         "samples": per_repetition(runs, f"gemv/nf4/{shape}", f"gemv/bf16/{shape}"),
                         "detail": f"nf4 {gn:.2f} ms ({nb / 1e9:.1f} GB/s of nf4 bytes) vs bf16 {g:.2f} ms"})
    sweep = []
    for name in runs:
        if name.startswith("gemm/bf16/"):
            B = int(name.rsplit("/", 1)[1])
            sweep.append((B, med(name, "real_time"), med(name, "FLOP/s")))
    if sweep:
        sweep.sort()
        t1 = sweep[0][1] / sweep[0][0]
        detail = "; ".join(f"B={B}: {f / 1e9:.0f} GFLOP/s, {t / B:.2f} ms/token" for B, t, f in sweep)
        rows.append({"name": "batched bf16 GEMM: per-token time at the largest batch / at the smallest",
                     "ratio": (sweep[-1][1] / sweep[-1][0]) / t1,
                     "sweep": [{"B": B, "ms": t, "gflops": f / 1e9} for B, t, f in sweep], "detail": detail})
    return rows


def main(src, dst, rows_of=None):
    """Reads a Google Benchmark JSON, writes the rows `rows_of` (default: this file's) makes of it, prints them."""
    with open(src) as f:
        data = json.load(f)
    refuse_errors(data, src)
    rows = (rows_of or rows_from)(data)
    with open(dst, "w") as f:
        json.dump(rows, f, indent=2)
    for r in rows:
        print(f"{r['name']}: {r['ratio']:.3f}  {r['detail']}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
