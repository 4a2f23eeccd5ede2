# The two commands of the README:
#   make report   installs what is missing (Debian 12, as root), builds, runs every claim, writes report/
#   make test     the same set-up, then the whole ctest suite (claims + unit tests)
PRESET ?= cpu
BUILD  ?= build
JOBS   ?= $(shell nproc)

.PHONY: all deps configure build test report clean
all: build

deps:
	@bash ci/install-deps.sh

configure: deps
	cmake --preset $(PRESET) -B $(BUILD)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j$(JOBS)

report: build
	$(BUILD)/claimcheck run --report report

clean:
	rm -rf $(BUILD) report
