"""Driver for ch02.attention_numpy: the series' numpy attention, verbatim, in fp32 and fp64.

usage: attention_numpy.py DIR N [FAULT]
Reads DIR/case{i}_{q,k,v}.npy ([B, H, T, D] fp32), writes DIR/case{i}_out32.npy and _out64.npy.
A planted FAULT (tests only) breaks the code the way the series warns against."""
import json
import sys

import numpy as np


def attention(q, k, v, fault=""):
    # q, k, v: [B, T, D] — the series' code.
    B, T, d = q.shape
    mask = np.tril(np.ones((T, T), dtype=bool), k=1 if fault == "mask_off_by_one" else 0)
    scores = np.einsum("btd,bsd->bts", q, k) / (d if fault == "scale_by_d" else np.sqrt(d))  # [B, T, S]
    scores = np.where(mask, scores, -np.inf)                                                 # causal mask
    m = 0 if fault == "no_max_subtraction" else scores.max(-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.exp(scores - m)                                                               # max subtracted
        p = p / p.sum(-1, keepdims=True)
    return np.einsum("bts,bsd->btd", p, v)                                                   # [B, T, D]


def main():
    folder, n = sys.argv[1], int(sys.argv[2])
    fault = sys.argv[3] if len(sys.argv) > 3 else ""
    computed = {}
    for i in range(n):
        q, k, v = (np.load(f"{folder}/case{i}_{x}.npy") for x in "qkv")
        B, H, T, D = q.shape
        for dtype, tag in ((np.float32, "out32"), (np.float64, "out64")):
            args = [a.astype(dtype).reshape(B * H, T, D) for a in (q, k, v)]
            out = attention(*args, fault=fault)
            computed[np.dtype(dtype).name + " inputs"] = out.dtype.name
            np.save(f"{folder}/case{i}_{tag}.npy", out.astype(dtype).reshape(B, H, T, D))
    details = {"numpy": np.__version__, "python": sys.version.split()[0], "computed_in": computed}
    if computed.get("float32 inputs") == "float64":
        # NumPy >= 2 (NEP 50): float32 scores / np.sqrt(d), a float64 scalar, is float64. The series' code,
        # verbatim, runs its "fp32" path in fp64 from the scaling on; the output is cast back to float32.
        details["promotion"] = ("NumPy " + np.__version__ + " promotes float32 scores to float64 at '/ np.sqrt(d)' "
                                "(NEP 50): the fp32 case computes in float64 after the first einsum")
    print(json.dumps({"details": details}))


main()
