"""Peak memory of loading a chat-style JSONL file into a list vs streaming it through generators
(ch01.list_peak_ratio, ch01.generator_peak_flat). Each measurement runs in its own process; its peak
RSS comes from wait4's rusage for that child alone."""
import json
import os
import random
import subprocess
import sys
import tempfile

LOAD_ALL = r"""
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]   # everything in a list
print(sum(len(m["content"]) for r in rows for m in r["messages"]))
"""
STREAM = r"""
import json, sys
def read(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)                                            # one row at a time
def lengths(rows):
    for r in rows:
        yield sum(len(m["content"]) for m in r["messages"])
print(sum(lengths(read(sys.argv[1]))))
"""
# A planted fault: the pipeline is built and never driven (its generator printed, not summed).
STREAM_NOT_DRIVEN = STREAM.replace("print(sum(lengths(read(sys.argv[1]))))", "print(lengths(read(sys.argv[1])))")
# A planted fault: the "pipeline" materialises a list after all.
STREAM_AS_LIST = STREAM.replace("yield json.loads(line)", "pass\n    return [json.loads(l) for l in open(path, encoding='utf-8')]")

# A planted fault: "load all" that leaves out the file's last row (the same peak, another total).
LOAD_ALL_DROPS_LAST = LOAD_ALL.replace('open(sys.argv[1], encoding="utf-8")]', 'list(open(sys.argv[1], encoding="utf-8"))[:-1]]')
# A planted fault for list_peak_ratio: "load all" that streams after all.
LOAD_ALL_AS_STREAM = r"""
import json, sys
print(sum(sum(len(m["content"]) for m in json.loads(line)["messages"]) for line in open(sys.argv[1], encoding="utf-8")))
"""

WORDS = ("the model loss token batch gradient memory layer attention value query key tensor shape "
         "python generator list process thread data file config seed learning rate step").split()


def make_jsonl(path, target_bytes, seed):
    """Writes the file; returns its size and the total length of its messages' contents (what both programs print)."""
    rng = random.Random(seed)
    size = chars = 0
    with open(path, "w", encoding="utf-8") as f:
        i = 0
        while size < target_bytes:
            def text(n):
                return " ".join(rng.choice(WORDS) for _ in range(n))
            row = {"id": i, "messages": [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": text(rng.randint(8, 40))},
                {"role": "assistant", "content": text(rng.randint(20, 120))}]}
            line = json.dumps(row, ensure_ascii=False) + "\n"
            chars += sum(len(m["content"]) for m in row["messages"])
            f.write(line)
            size += len(line.encode("utf-8"))
            i += 1
    return size, chars


def peak_rss_bytes(code, path):
    """The child's peak RSS and what it printed (its one line: the total it computed)."""
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen([sys.executable, "-c", code, path], stdout=out)
        _, status, usage = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"child failed with {status}")
        out.seek(0)
        return usage.ru_maxrss * 1024, out.read().decode("utf-8", "replace").strip()  # Linux: kilobytes


def measure(base_bytes, factors, seed, stream_code):
    out = []
    with tempfile.TemporaryDirectory(prefix="claimcheck_jsonl_") as d:
        for k in factors:
            path = os.path.join(d, f"chat_{k}x.jsonl")
            size, chars = make_jsonl(path, base_bytes * k, seed + k)
            load_peak, load_printed = peak_rss_bytes(globals()["LOAD_ALL"], path)
            stream_peak, stream_printed = peak_rss_bytes(stream_code, path)
            out.append({"factor": k, "file_bytes": size, "chars": chars,
                        "load_all_peak_bytes": load_peak, "load_all_printed": load_printed,
                        "stream_peak_bytes": stream_peak, "stream_printed": stream_printed})
            os.remove(path)
    baseline = peak_rss_bytes("pass", "-")[0]
    return out, baseline


def wrong_totals(rows, side):
    """The runs whose program (side: "load_all" or "stream") printed another total than the file's."""
    return sum(r[side + "_printed"] != str(r["chars"]) for r in rows)
