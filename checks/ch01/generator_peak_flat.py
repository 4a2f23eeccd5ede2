"""ch01.generator_peak_flat: a generator pipeline's peak RSS does not grow with the file (1x, 2x, 4x the
series' 19.4 MB) while loading everything grows with it."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pydriver import emit, fault, measurement  # noqa: E402
import jsonl_memory  # noqa: E402
from jsonl_memory import (STREAM, STREAM_AS_LIST, STREAM_LENGTHS_LISTED, STREAM_NOT_DRIVEN, measure,  # noqa: E402
                          wrong_totals)

base = float(sys.argv[1]) if len(sys.argv) > 1 else 19.4e6
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
code = {"list_pipeline": STREAM_AS_LIST, "stream_not_driven": STREAM_NOT_DRIVEN,
        "lengths_listed": STREAM_LENGTHS_LISTED}.get(fault(), STREAM)
if fault() == "stream_instead_of_list":  # a planted fault: the "load everything" side streams after all
    jsonl_memory.LOAD_ALL = jsonl_memory.LOAD_ALL_AS_STREAM
if fault() == "load_all_drops_last":  # a planted fault: the list leaves out the last row
    jsonl_memory.LOAD_ALL = jsonl_memory.LOAD_ALL_DROPS_LAST
rows, baseline = measure(int(base), [1, 2, 4], seed, stream_code=code)
one, four = rows[0], rows[-1]
emit(measurements=[measurement("value", one["stream_peak_bytes"] / 1e6, "MB"),
                   measurement("growth", four["stream_peak_bytes"] / one["stream_peak_bytes"], "x"),
                   measurement("load_all_growth", four["load_all_peak_bytes"] / one["load_all_peak_bytes"], "x"),
                   # The growth in bytes: of the peak per byte the file grew (a ratio of peaks hides a small object
                   # kept per row, ~40 bytes of each row's ~800, under its 25%).
                   measurement("growth_per_file_byte", (four["stream_peak_bytes"] - one["stream_peak_bytes"])
                               / (four["file_bytes"] - one["file_bytes"]), "ratio"),
                   # What each timed process computed: the total length of the file's messages, as written.
                   measurement("rss_calibration", jsonl_memory.calibration(), "ratio"),
                   measurement("totals_mismatch", wrong_totals(rows, "stream") + wrong_totals(rows, "load_all"),
                               "count")],
     details={"runs": rows, "interpreter_baseline_bytes": baseline, "planted_fault": fault() or None},
     assumptions=["the pipeline is read() -> json.loads -> lengths(), generators end to end; peak RSS per fresh "
                  "process, the interpreter included (a bare one: %.1f MB)" % (baseline / 1e6)])
