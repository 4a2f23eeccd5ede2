#!/usr/bin/env python3
"""Every input a check reads is in its claim's expected file, the GPU forms' included (they run only where a GPU
is, so a missing input would first show there, after the device was spent). Read statically: the names a check
passes to ctx.input / ctx.input_path / positive_int / batch_list, and those chapter 6's GPU helpers read
(testbed/gpu.h: shape -> hidden, kv_dim, ffn; chain_layers -> gpu_layers; chain_vocab -> gpu_vocab; testbed/
decode_chain.h: decode_chain -> both chains' shapes).

usage: check_inputs.py --root DIR"""
import argparse
import glob
import json
import os
import re
import sys

READS = re.compile(r'(?:ctx\.input|ctx\.input_path|positive_int\(ctx,|batch_list\(ctx,|positive_input\(ctx,)\s*\(?\s*"([a-z0-9_]+)"')
HELPERS = {
    r"G::shape\(": ("hidden", "kv_dim", "ffn"),
    r"chain_layers\(": ("gpu_layers",),
    r"chain_vocab\(": ("gpu_vocab",),
    r"decode_shape\(": ("hidden", "kv_dim", "ffn", "layers"),
    # testbed/decode_chain.h: the CPU stack's shape, the GPU chain's shape and size
    r"decode_chain\(": ("hidden", "kv_dim", "ffn", "layers", "gpu_layers", "gpu_vocab"),
}
CLAIM = re.compile(r'\.claim\("([a-z0-9_.]+)"\)')


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    a = p.parse_args()
    bad, seen = [], 0
    for src in sorted(glob.glob(os.path.join(a.root, "checks", "ch0*", "*.cpp"))):
        text = open(src, encoding="utf-8").read()
        claims = CLAIM.findall(text)
        if not claims:
            continue
        names = set(READS.findall(text))
        for pat, implied in HELPERS.items():
            if re.search(pat, text):
                names.update(implied)
        for claim in claims:
            ch, name = claim.split(".", 1)
            exp = os.path.join(a.root, "expected", ch, name + ".json")
            inputs = json.load(open(exp)).get("inputs", {})
            seen += 1
            for n in sorted(names - set(inputs)):
                bad.append(f"{os.path.relpath(src, a.root)} reads inputs.{n}; {os.path.relpath(exp, a.root)} has none")
    for b in bad:
        print(b)
    print(f"{seen} checks read; {len(bad)} missing inputs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
