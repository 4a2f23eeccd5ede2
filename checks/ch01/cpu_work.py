"""CPU-bound 'preprocessing' in pure Python for the thread and process pool claims."""
import hashlib
import time

from pydriver import fault


def preprocess(chunk):
    """Pure-Python work: normalise and hash-bucket the words of some generated lines (holds the GIL)."""
    if fault() == "gil_releasing_work":  # a planted fault: hashlib on big buffers releases the GIL
        buf = bytes(range(256)) * 256  # 64 KiB: hashlib releases the GIL above 2 KiB
        for _ in range(chunk[1] // 40):
            hashlib.sha256(buf).digest()
        return 0
    seed, n = chunk
    total = 0
    for i in range(n):
        word = f"token{seed * 7919 + i}"
        h = 0
        for ch in word.lower():
            h = (h * 131 + ord(ch)) % 1000003
        total += h % 97
    return total


def chunks(workers, items_per_chunk):
    return [(w, items_per_chunk) for w in range(workers * 4)]


def best_of_interleaved(repeats, *fns):
    """Best time of each fn over `repeats` rounds, the fns alternating within a round, so that a slow
    spell of a shared machine hits both sides of a ratio rather than one."""
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t)
    return best
