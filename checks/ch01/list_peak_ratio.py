"""ch01.list_peak_ratio: a JSONL file of the series' size (19.4 MB), read into a list; peak RSS / file size."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pydriver import emit, fault, measurement  # noqa: E402
import jsonl_memory  # noqa: E402

base = float(sys.argv[1]) if len(sys.argv) > 1 else 19.4e6
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
if fault() == "stream_instead_of_list":
    jsonl_memory.LOAD_ALL = jsonl_memory.LOAD_ALL_AS_STREAM
if fault() == "load_all_drops_last":  # a planted fault: the list leaves out the last row
    jsonl_memory.LOAD_ALL = jsonl_memory.LOAD_ALL_DROPS_LAST
if fault() == "load_all_keeps_lines":  # a planted fault: the lines kept beside the rows
    jsonl_memory.LOAD_ALL = jsonl_memory.LOAD_ALL_KEEPS_LINES
rows, baseline = jsonl_memory.measure(int(base), [1], seed, stream_code="pass", deep=True)
r = rows[0]
emit(measurements=[measurement("value", r["load_all_peak_bytes"] / r["file_bytes"], "x"),
                   measurement("times_file_size", r["load_all_peak_bytes"] / r["file_bytes"], "x"),
                   measurement("peak", r["load_all_peak_bytes"] / 1e6, "MB"),
                   measurement("rss_calibration", jsonl_memory.calibration(), "ratio"),
                   measurement("totals_mismatch", jsonl_memory.wrong_totals(rows, "load_all"), "count"),
                   # The list's bytes (its peak less a bare interpreter's) per byte of the parsed rows themselves:
                   # one copy of them, and the allocator's slack; a loader keeping the lines too holds a second.
                   measurement("copies_of_rows", (r["load_all_peak_bytes"] - baseline) / r["rows_deep_bytes"], "ratio"),
                   measurement("file_size_mismatch", jsonl_memory.size_mismatch(rows), "count")],
     details={"file_bytes": r["file_bytes"], "load_all_peak_bytes": r["load_all_peak_bytes"],
              "rows_deep_bytes": r["rows_deep_bytes"],
              "interpreter_baseline_bytes": baseline, "python": sys.version.split()[0]},
     assumptions=["generated chat-style JSONL (system/user/assistant messages) of the series' size; peak RSS of a "
                  "fresh interpreter that json.loads every line into a list (the interpreter's own RSS included, "
                  "as a process monitor shows it)"],
     alternatives=[{"name": "without the interpreter's own RSS",
                    "value": (r["load_all_peak_bytes"] - baseline) / r["file_bytes"], "unit": "x",
                    "assumptions": f"minus a bare interpreter's {baseline / 1e6:.1f} MB"}])
