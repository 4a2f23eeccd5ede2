# The two commands of the README:
#   make report   installs what is missing (Debian 12, as root), builds, runs every claim, writes report/
#   make test     the same set-up, then the ctest suite (claims, planted faults, unit tests) less the whole forms of
#                 the long script tests and of chapter 3's minute of training, which runs on its short budget there
#                 (label full: `ctest --test-dir build -L full`, a CI stage of its own; `make report` runs it whole)
# LibTorch is the PyTorch 2.x of the interpreter ci/setup-python.sh prints: $CLAIMCHECK_PYTHON, else python3
# when it imports torch >= 2.4, else a shared environment created once per machine (see the README).
# On a host whose NVIDIA driver lists a GPU, and with nvcc: the cuda preset (its GPU checks measure the GPU); a GPU
# without nvcc: the cpu preset, said in one line (the rows measured on the CPU in the GPU's place say so too).
HOST_GPU := $(shell sed -n 's/^Model:[[:space:]]*//p' /proc/driver/nvidia/gpus/*/information 2>/dev/null | head -n 1)
NVCC := $(shell command -v nvcc 2>/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
ifeq ($(HOST_GPU),)
PRESET ?= cpu
else ifeq ($(NVCC),)
PRESET ?= cpu
$(info claimcheck: this host has a GPU ($(HOST_GPU)) but no nvcc: the cpu preset, so the GPU checks measure the CPU and say so)
else
PRESET ?= cuda
endif
BUILD  ?= build
JOBS   ?= $(shell nproc)

.PHONY: all deps configure build test report matrix clean
all: build

# Each step stamps its end in $(BUILD)/.claimcheck-t-* (seconds since the epoch): make test prints the split.
deps:
	@mkdir -p $(BUILD) && date +%s > $(BUILD)/.claimcheck-t-start
	@bash ci/install-deps.sh

configure: deps
	@py=$$(bash ci/setup-python.sh) && echo "claimcheck: Python $$py" && \
	  cmake --preset $(PRESET) -B $(BUILD) -DCLAIMCHECK_PYTHON="$$py"
	@date +%s > $(BUILD)/.claimcheck-t-configured

build: configure
	cmake --build $(BUILD) -j$(JOBS)
	@date +%s > $(BUILD)/.claimcheck-t-built

# Two passes: the tests that run alone first (label timed: a claim's time or rate, a benchmark, a timeout; RUN_SERIAL),
# then the rest packed $(JOBS) at a time. Mixed in one pass, ctest drains every slot before each of the ~60 alone
# (about 90 s of idle cores on 2);
# the second pass leaves the planted-fault tests' fixture (figures_turned) to the tests it selects, which include
# every untimed fault test (the timed ones ran in the first pass and left their flips).
test: build
	@rc=0; ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j$(JOBS) -L '^timed$$' -LE '^full$$' || rc=$$?; \
	  ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j$(JOBS) -LE '^(full|timed)$$' \
	    --fixture-exclude-setup figures_turned || rc=$$?; \
	  t=$(BUILD)/.claimcheck-t; s=$$(cat $$t-start); c=$$(cat $$t-configured); b=$$(cat $$t-built); e=$$(date +%s); \
	  echo "make test: set-up $$((c - s)) s, build $$((b - c)) s, tests $$((e - b)) s; $$((e - s)) s in all (exit $$rc)"; \
	  exit $$rc

# The benchmarks run 9 repetitions of 0.05 s each (the fewest claimcheck compare's U test judges), in random order so
# that a drift of this machine's speed during the run spreads over every benchmark; their ratios, and each
# repetition's, land in the report. Their console output (Debian's Google Benchmark warns that it was built as DEBUG)
# goes to build/bench_*.err, shown only when a benchmark fails. A report already in report/ is the previous one:
# report.html shows what changed since (claimcheck compare).
BENCH_ARGS ?= --benchmark_min_time=0.05 --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true
report: build
	@rm -f $(BUILD)/bench_rows_*.json
	@if [ -x $(BUILD)/claimcheck_bench_attention ]; then \
	  echo "claimcheck: the attention benchmark (9 repetitions, about a minute)"; \
	  $(BUILD)/claimcheck_bench_attention $(BENCH_ARGS) --benchmark_out=$(BUILD)/bench_attention.json \
	    --benchmark_out_format=json >/dev/null 2>$(BUILD)/bench_attention.err || { cat $(BUILD)/bench_attention.err >&2; exit 2; } && \
	  python3 ci/bench_ratios.py $(BUILD)/bench_attention.json $(BUILD)/bench_rows_attention.json && \
	  "$$(bash ci/setup-python.sh)" ci/python_competitor.py --bench $(BUILD)/bench_attention.json \
	    --out $(BUILD)/bench_rows_competitor.json; fi
	@if [ -x $(BUILD)/claimcheck_bench_decode ]; then \
	  echo "claimcheck: the decode benchmark (9 repetitions, about a minute)"; \
	  $(BUILD)/claimcheck_bench_decode $(BENCH_ARGS) --benchmark_out=$(BUILD)/bench_decode.json \
	    --benchmark_out_format=json >/dev/null 2>$(BUILD)/bench_decode.err || { cat $(BUILD)/bench_decode.err >&2; exit 2; } && \
	  python3 ci/bench_decode_ratios.py $(BUILD)/bench_decode.json $(BUILD)/bench_rows_decode.json; fi
	@python3 -c 'import glob, json, sys; print(json.dumps([r for f in sorted(glob.glob(sys.argv[1])) for r in json.load(open(f))], indent=2))' \
	  '$(BUILD)/bench_rows_*.json' > $(BUILD)/benchmarks.json
	@prev=; if [ -f report/report.json ]; then cp report/report.json $(BUILD)/previous-report.json; \
	  prev="--previous $(BUILD)/previous-report.json"; fi; \
	  $(BUILD)/claimcheck run --report report --benchmarks $(BUILD)/benchmarks.json $$prev; rc=$$?; \
	  if [ $$rc -eq 1 ]; then echo "claimcheck: exit 1: a claim failed or passed unexpectedly on this machine (the FAIL / XPASS lines above; report/report.html); make says Error 1 and exits 2"; \
	  elif [ $$rc -ne 0 ]; then echo "claimcheck: exit $$rc: bad input or a check error (the line above names the file and field, or the ERROR claim); make exits 2"; fi; \
	  exit $$rc

# Which claims hold on which machines: results/*/report.json (one per machine measured) as docs/matrix.md (the build
# keeps it current) and matrix/ (matrix.html, matrix.md, matrix.json). A machine not yet in results/: copy its
# report/report.json (and report.html) to results/<machine>/ first.
matrix: build
	$(BUILD)/claimcheck matrix results/*/report.json --out matrix

clean:
	rm -rf $(BUILD) report
