"""Peak memory of loading a chat-style JSONL file into a list vs streaming it through generators
(ch01.list_peak_ratio, ch01.generator_peak_flat). Each measurement runs in its own process; its peak
RSS comes from wait4's rusage for that child alone."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

from pydriver import fault

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
# A planted fault: the per-row lengths collected in a list before they are summed (a small object per row).
STREAM_LENGTHS_LISTED = STREAM.replace("print(sum(lengths(read(sys.argv[1]))))",
                                       "print(sum(list(lengths(read(sys.argv[1])))))")
assert STREAM_LENGTHS_LISTED != STREAM
# A planted fault: the "pipeline" materialises a list after all.
STREAM_AS_LIST = STREAM.replace("yield json.loads(line)", "pass\n    return [json.loads(l) for l in open(path, encoding='utf-8')]")

# A planted fault: "load all" that leaves out the file's last row (the same peak, another total).
LOAD_ALL_DROPS_LAST = LOAD_ALL.replace('open(sys.argv[1], encoding="utf-8")]', 'list(open(sys.argv[1], encoding="utf-8"))[:-1]]')
# A planted fault: "load all" that keeps the file's lines beside the rows (a second copy of the data).
LOAD_ALL_KEEPS_LINES = LOAD_ALL.replace('rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]',
                                        'lines = open(sys.argv[1], encoding="utf-8").readlines()\n'
                                        'rows = [json.loads(line) for line in lines]')
assert LOAD_ALL_KEEPS_LINES != LOAD_ALL
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
            row = {"id": i, "messages": [  # (the system prompt's Chinese: 3 bytes a character in UTF-8)
                {"role": "system", "content": "You are a helpful assistant. 你是一个乐于助人的助手。"},
                {"role": "user", "content": text(rng.randint(8, 40))},
                {"role": "assistant", "content": text(rng.randint(20, 120))}]}
            line = json.dumps(row, ensure_ascii=False) + "\n"
            chars += sum(len(m["content"]) for m in row["messages"])
            f.write(line)
            # A planted fault: the size counted in characters, which ASCII alone would not tell from bytes.
            size += len(line) if fault() == "size_in_characters" else len(line.encode("utf-8"))
            i += 1
    return size, chars


def size_mismatch(rows):
    """The bytes by which the sizes the writer counted miss the files' sizes on disk, summed over the runs."""
    return float(sum(abs(r["file_bytes"] - r["disk_bytes"]) for r in rows))


def peak_rss_bytes(code, path):
    """The child's peak RSS and what it printed (its one line: the total it computed)."""
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen([sys.executable, "-c", code, path], stdout=out)
        _, status, usage = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"child failed with {status}")
        out.seek(0)
        # Linux: kibibytes (a planted fault reads them as 1,000 bytes: 2.4% low, which ratios of peaks cancel)
        kib = 1000 if fault() == "rss_kilobytes_as_1000" else 1024
        return usage.ru_maxrss * kib, out.read().decode("utf-8", "replace").strip()


def rows_deep_bytes(path):
    """What the file's rows occupy once parsed, as this interpreter builds them (json.loads of each line): every
    object reachable from the list (the list, each dict, key, string and number) counted once by sys.getsizeof."""
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    seen, total, todo = set(), 0, [rows]
    while todo:
        o = todo.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            todo.extend(o.keys())
            todo.extend(o.values())
        elif isinstance(o, list):
            todo.extend(o)
    return total


# The yardstick of the peaks: two children that allocate and touch 256 and 512 MiB (one bytes object each), the
# difference of their peaks over 256 MiB: 1 when the peaks are read in bytes. (Two children, not one against a bare
# interpreter: a child's peak starts at its parent's RSS at the fork, which the bare one may not pass.)
CALIBRATE = "b = b'\\x01' * ({} << 20)"


def calibration():
    return (peak_rss_bytes(CALIBRATE.format(512), "-")[0] - peak_rss_bytes(CALIBRATE.format(256), "-")[0]) / (256 << 20)


def measure(base_bytes, factors, seed, stream_code, deep=False):
    """Each factor's file and the two programs' peaks; the bare interpreter's peak. With deep, each file's parsed rows'
    size too (rows_deep_bytes), computed last: a child's peak RSS starts at its parent's RSS when it forks (Linux keeps
    the forked copy's high-water mark across exec), so nothing big is built here before the children have run."""
    out, paths = [], []
    with tempfile.TemporaryDirectory(prefix="claimcheck_jsonl_") as d:
        # One file of the base size, written once; a factor k's file is its rows k times over (json.loads builds new
        # objects for every line, so the rows cost what distinct ones would; generating each anew took most of the
        # run).
        base = os.path.join(d, "chat_base.jsonl")
        base_size, base_chars = make_jsonl(base, base_bytes, seed + 1)
        for k in factors:
            path = os.path.join(d, f"chat_{k}x.jsonl")
            with open(path, "wb") as dst:  # (copied in 1 MiB pieces: this process's RSS at each fork is the floor
                for _ in range(k):        # of its children's peaks, see above)
                    with open(base, "rb") as src:
                        shutil.copyfileobj(src, dst, 1 << 20)
            size, chars = base_size * k, base_chars * k
            load_peak, load_printed = peak_rss_bytes(globals()["LOAD_ALL"], path)
            stream_peak, stream_printed = peak_rss_bytes(stream_code, path)
            out.append({"factor": k, "file_bytes": size, "disk_bytes": os.path.getsize(path), "chars": chars,
                        "load_all_peak_bytes": load_peak, "load_all_printed": load_printed,
                        "stream_peak_bytes": stream_peak, "stream_printed": stream_printed})
            if deep:
                paths.append(path)
            else:
                os.remove(path)
        baseline = peak_rss_bytes("pass", "-")[0]
        for r, path in zip(out, paths):
            r["rows_deep_bytes"] = rows_deep_bytes(path)
    return out, baseline


def wrong_totals(rows, side):
    """The runs whose program (side: "load_all" or "stream") printed another total than the file's."""
    return sum(r[side + "_printed"] != str(r["chars"]) for r in rows)
