#!/usr/bin/env python3
"""Fails unless a binary's embedded device code (cubins) was built for exactly the expected architectures.
The CUDA toolkit here has no cuobjdump; each cubin nvcc embeds records the ptxas command line that made it
("-arch sm_90a -m 64"), which is what this reads.

usage: cuda_arch.py BINARY ARCH [ARCH...]     (ARCH as in CUDA_ARCHITECTURES: 90, 90a, 90a-real)"""
import re
import sys


def main(path, archs):
    data = open(path, "rb").read()
    seen = sorted(set(m.decode() for m in re.findall(rb"-arch (sm_[0-9]+[a-z]?) ", data)))
    want = sorted(set("sm_" + re.sub(r"-(real|virtual)$", "", a) for a in archs))
    print(f"{path}: cubins for {seen or 'nothing'}; expected {want}")
    return 0 if seen == want else 1


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
