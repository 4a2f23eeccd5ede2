// Selection and running of claims (internal).
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "claimcheck/check.h"
#include "expected.h"
#include "outcome.h"
#include "probe.h"

namespace claimcheck {

struct Selection {
  std::vector<std::string> chapters;  // chNN, exact
  std::vector<std::string> claims;    // ids or globs (fnmatch)
  std::vector<std::string> labels;    // chapter, kind, requirement or "pending", exact
};

// All labels a claim carries: its chapter, kinds, requirements, and "pending" while its check has not arrived.
std::vector<std::string> labels_of(const Expected& e);

// The ids of `catalogue` that the selection picks, in id order. Within one option the values are
// alternatives (OR); different options must all hold (AND). Throws InputError for an unknown
// chapter, id or label, or a glob that matches nothing.
std::vector<std::string> select_claims(const std::map<std::string, Expected>& catalogue, const Selection& sel);

// Which requirements this build and machine meet; unmet ones carry the reason.
class Capabilities {
 public:
  explicit Capabilities(const HardwareInfo* hw) : hw_(hw) {}
  // nullopt when available; else why not.
  std::optional<std::string> missing(Requirement r);

 private:
  const HardwareInfo* hw_;
  std::map<Requirement, std::optional<std::string>> cache_;
};

struct RunContextInputs {
  std::filesystem::path root;
  std::uint64_t seed = 0;
  const HardwareInfo* hardware = nullptr;
  std::function<nlohmann::json()> records;   // the run's seven records, built on demand
  std::string planted_fault;                 // $CLAIMCHECK_FAULT (tests only)
  std::vector<std::string> selected_labels;  // --label values
  std::vector<std::string> statements;       // --statement values: judge only these (empty: every statement)
  std::filesystem::path artifact_dir;        // where keep_file() puts files (report/artifacts); empty: a temp folder
};

// Whether a run selecting `labels` asks for work of this kind ("measured", "analytic", ...): false only when the
// labels name kinds and not this one (Context::part_selected).
bool kind_selected(const std::vector<std::string>& labels, const std::string& kind);

// Registers a check for each claim of `catalogue` whose expected file names a `driver` (a Python script and its
// arguments): it runs the script and forwards its result (claimcheck/io.h), as a one-line C++ check would. An
// InputError names the file where the claim also has a check registered in C++. Replaces the drivers of a previous
// catalogue.
void register_drivers(const std::map<std::string, Expected>& catalogue);

// Whether a run that selects `selected` (--statement values; empty: all) judges the statement `name`.
bool statement_selected(const std::vector<std::string>& selected, const std::string& name);
// Whether such a run judges a statement of the claim's measured part ("part": "measured"): always without --statement.
bool measured_part_judged(const Expected& e, const std::vector<std::string>& selected);

// The module a run must load before `check` (or its measured part) runs: true when it, or its measured part
// selected by `labels`, sits in the unloaded LibTorch module and its requirements are met here.
bool needs_module(const std::string& id, const std::vector<std::string>& labels, Capabilities& caps);

// Whether a variant's condition (Variant::when) holds on this machine, with the values the check derived.
bool variant_matches(const FeatureExpr& when, const HardwareInfo* hw, const std::map<std::string, double>& derived);
// Why `when` holds here, in words and this run's figures ("library_gemm_pct = 37.2 <50", "isa:avx512_bf16 (this
// machine)"); "" where it does not hold.
std::string variant_because(const FeatureExpr& when, const HardwareInfo* hw,
                            const std::map<std::string, double>& derived);
// A reason with this run's figures: "{NAME}" becomes the derived value or the measurement NAME (3 significant
// digits); a name without a figure is an InputError naming `file` and `field`.
std::string with_figures(const std::string& text, const std::map<std::string, double>& derived,
                         const std::vector<Measurement>& ms, const std::string& file, const std::string& field);

// Refuses, with an InputError naming the expected file and the field, a variant chosen by a derived value that the
// claim's check does not declare, or declares as computed by the code under test (check.h Source): an expected
// failure is chosen only by what the code under test cannot change. A claim whose check or measured part sits in the
// unloaded LibTorch module is passed over: call this again once the module is loaded.
void refuse_selectors_under_test(const std::map<std::string, Expected>& catalogue);

// What else the CPUs this process may run on did while a claim ran: the CPU time of every other process (their busy
// time from /proc/stat's per-CPU lines, less this process's and its waited-for children's) and the hypervisor's steal
// time, each as a share of the wall time x those CPUs. (A neighbour on CPUs outside this process's affinity mask, a
// container's on a large host, takes nothing from it; one on its own CPUs does, however few they are of the host's.)
struct MachineLoad {
  double others = 0;  // 0..1 of the capacity of this process's CPUs
  double steal = 0;
  int cpus = 0;  // how many CPUs the capacity counts
  double busy() const { return others + steal; }
};
struct CpuJiffies {
  double busy = 0, steal = 0;  // non-idle time (steal apart; guest time is inside user), steal
  int cpus = 0;                // the CPUs whose lines were read (0: the aggregate line)
};
// The jiffies of the CPUs `cpus` (their "cpuN" lines) in /proc/stat's text; of the aggregate "cpu" line where `cpus`
// is empty, or where none of them has a line (a container's /proc/stat numbering its CPUs apart from the host's ids
// that sched_getaffinity gives, as LXCFS does: the whole of what it shows is then the container's).
CpuJiffies parse_proc_stat(const std::string& text, const std::vector<int>& cpus);
// The load between two readings: (busy - own) and steal over wall x cpus x hz, each clamped to 0..1.
MachineLoad load_between(const CpuJiffies& before, const CpuJiffies& after, double own_jiffies, double wall_s, int cpus,
                         double hz);
class LoadWatch {
 public:
  LoadWatch();
  MachineLoad stop() const;

 private:
  std::vector<int> cpus_;  // this process's affinity mask when the watch started
  double wall0_ = 0, own0_ = 0;
  CpuJiffies start_;
};
// Above this share of this process's CPUs taken by others (or stolen), a timed claim's failure is not judged.
inline constexpr double kBusyShare = 0.2;

// Whether a neighbour could explain this outcome of a timed claim: an xpass, an error, or a fail none of whose failing
// statements is untimed (Statement::untimed: what the run computed, against the answer key). A wrong output is
// wrong on a busy machine too.
bool interference_may_explain(const Expected& e, const ClaimResult& r);

// run_claim for a timed claim (Expected::timed) on a machine others share: where it fails (a fail, an xpass, an
// error; interference_may_explain) while other processes took more than kBusyShare of the CPUs, it is run again (up to
// `tries` runs in all, `pause_s` apart); where the machine stays busy, the outcome is an error naming the interference
// and its figures, never a failure with a wrong cause. details.interference records each run's load. A claim not timed:
// run_claim.
ClaimResult run_claim_watched(const Expected& e, const RunContextInputs& in, Capabilities& caps, int tries = 3,
                              double pause_s = 2);

// Run one claim: its check (or its pending skip), its measured part registered apart when the run selects it,
// then the comparisons with its expected file.
ClaimResult run_claim(const Expected& e, const RunContextInputs& in, Capabilities& caps);

}  // namespace claimcheck
