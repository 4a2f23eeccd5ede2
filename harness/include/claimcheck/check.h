// claimcheck/check.h — the one header a check includes.
//
// A check is a plain function that *computes* figures and records them on a
// Context; it never prints and never holds a tolerance. The runner compares what
// the check measured with the claim's expected file (expected/chNN/<name>.json)
// and decides pass / fail / xfail / xpass / skip / error.
//
//   static void full_finetune_gb(claimcheck::Context& ctx) {
//     const auto cfg = claimcheck::ref::load_model_config(ctx.input_path("config"));
//     ...
//     ctx.measure(bytes / 1e9, "GB");
//   }
//   CLAIMCHECK_REGISTER(full_finetune_gb).claim("ch04.full_finetune_gb");
//   CLAIMCHECK_REGISTER(kv_cache_allocated).claim("ch06.kv_cache").part("measured");
//   CLAIMCHECK_REGISTER(ridge_measured).claim("ch06.ridge_measured").derives("measured_ridge",
//   claimcheck::Source::probe);
//
// What a check needs (libtorch, python, gpu, numpy) is said once, in its expected file (`requires`, and
// `parts.measured.requires` for a measured part registered apart): the runner skips it where that is missing, and
// the build puts the checks that use LibTorch into the LibTorch checks module.
//
// Registration is static (googletest / google-benchmark style): link check
// objects directly (an OBJECT library) so the registrars are not dropped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace claimcheck {

struct HardwareInfo;  // harness/src/probe.h; checks reach it through Context::hardware()

// What a check needs to run (named in its expected file). A build or machine without it reports "skip" with the reason.
enum class Requirement { libtorch, python, gpu, numpy };
const char* to_string(Requirement r);

class Context {
 public:
  virtual ~Context() = default;

  virtual const std::string& claim_id() const = 0;

  // inputs.<name> of the claim's expected file, resolved against the repository root.
  virtual std::filesystem::path input_path(const std::string& name) const = 0;
  // inputs.<name> as JSON (for structured inputs such as a quantisation format).
  virtual const nlohmann::json& input(const std::string& name) const = 0;

  // The primary figure of the claim (compared with the expected file's `value`).
  virtual void measure(double value, const std::string& unit) = 0;
  // A named figure (compared with `also.<name>` when the expected file states one;
  // otherwise reported as a measurement).
  virtual void measure(const std::string& name, double value, const std::string& unit) = 0;
  virtual void measure_bool(const std::string& name, bool value) = 0;
  // A value derived on this machine that a `band` comparison can be relative to, or a variant chosen by; its source
  // is declared at the registration (CheckBuilder::derives).
  virtual void derive(const std::string& name, double value, const std::string& unit) = 0;

  // Explanations: the assumptions that produce the figure, and the figure under
  // the common alternatives (the report shows all of them).
  virtual void assumption(const std::string& text) = 0;
  virtual void alternative(const std::string& name, double value, const std::string& unit,
                           const std::string& assumptions) = 0;
  virtual void detail(const std::string& key, const nlohmann::json& value) = 0;
  // A part of the claim whose check arrives later: listed in the report as pending,
  // never counted as passed.
  virtual void pending(const std::string& what) = 0;

  // Stop the check and report "skip" with this reason (never a pass).
  [[noreturn]] virtual void skip(const std::string& reason) = 0;

  virtual std::uint64_t seed() const = 0;
  virtual const HardwareInfo& hardware() const = 0;
  // The repository root (inputs and drivers are found relative to it).
  virtual const std::filesystem::path& root() const = 0;
  // Whether the run asked for this kind of work ("measured", "analytic", ...): false only when --label
  // names kinds and not this one. A claim with an analytic and a measured part skips the measured part
  // under `--label analytic` and lists it as pending.
  virtual bool part_selected(const std::string& kind) const = 0;
  // Whether the run judges this statement ("value" or an `also` name): false only when `run --statement` names
  // others (a planted-fault test judges the statements its fault must turn, expected/<claim>.json's `faults`). A
  // check may skip the work behind statements the run does not judge; what it measures anyway is reported, unjudged.
  virtual bool wants(const std::string& statement) const = 0;
  bool wants_any(std::initializer_list<const char*> statements) const {
    for (const char* s : statements)
      if (wants(s)) return true;
    return false;
  }
  // Whether every statement the run judges is among these (a planted-fault test's run on a few cheap ones): the
  // check may then return once they are measured. False unless the runner says (a check doing all its work is right).
  virtual bool wants_only(std::initializer_list<const char*> statements) const {
    (void)statements;
    return false;
  }
  // Whether a statement the run judges rests on a time: false where the claim is not timed, or where `run
  // --statement` names only its untimed statements (what a timed run computed, a count: a planted-fault test's run).
  // A timed check may then run each timed kernel once, unpaired: its output is judged, its speed is not.
  virtual bool timing_judged() const = 0;
  // A fault planted on purpose by a test ($CLAIMCHECK_FAULT), "" in normal runs. Checks pass it to
  // the code under test; the report records it.
  virtual const std::string& planted_fault() const = 0;

  // Where the check writes a file the run keeps (a checkpoint, `name` without a directory): under the report's
  // artifacts/<claim id>/ (a temporary folder without --report). After the check returns, the harness hashes
  // every such file (sha256, bytes) into the logs record's checkpoints.
  virtual std::filesystem::path keep_file(const std::string& name) = 0;
  // The run's seven records (commit, data revision, config, environment, seed, hardware, logs),
  // exactly as the report carries them.
  virtual nlohmann::json records() const = 0;
};

using CheckFn = void (*)(Context&);

// Where a value a check derives (Context::derive) comes from, declared at its registration (CheckBuilder::derives):
//   probe       the machine: its measured roofs, clock, cores, or a library timed on the probe's threads apart from
//               the settings of the code under test;
//   reference   the answer key: a config, the ledger, a closed form, a reference library's own figure;
//   under_test  a figure the code under test computed (its loss, its spread, its kernel's rate).
// A variant's `when` may read the first two only: the harness refuses, when the check is loaded, an expected file
// whose variant is chosen by a figure of the code it judges (a slower kernel must not pick its own excuse).
enum class Source { probe, reference, under_test };
const char* to_string(Source s);

// Builder returned by CLAIMCHECK_REGISTER; records file and line of registration.
class CheckBuilder {
 public:
  CheckBuilder(CheckFn fn, const char* fn_name, const char* file, int line);
  CheckBuilder& claim(const std::string& id);
  // Registers the function as the claim's measured part, apart from its check: the runner calls it after the
  // check, on the same Context, when the run selects measured work and the part's requirements are met (else the
  // part is listed as pending with the reason). A check whose analytic part needs no LibTorch keeps it in the
  // executable and its LibTorch part in the module, so that `run --label analytic` never loads LibTorch.
  CheckBuilder& part(const std::string& kind);
  // Declares a value the check derives and its source (Source above). Context::derive of an undeclared name is an
  // error, so that every value a variant or a band reads says where it comes from.
  CheckBuilder& derives(const std::string& name, Source source);

 private:
  std::size_t index_;
};

}  // namespace claimcheck

#define CLAIMCHECK_CONCAT_(a, b) a##b
#define CLAIMCHECK_CONCAT(a, b) CLAIMCHECK_CONCAT_(a, b)
namespace claimcheck::detail {
CheckBuilder& make_check(CheckFn fn, const char* fn_name, const char* file, int line);
}
#define CLAIMCHECK_REGISTER(fn)                                                                         \
  [[maybe_unused]] static ::claimcheck::CheckBuilder& CLAIMCHECK_CONCAT(claimcheck_reg_, __COUNTER__) = \
      ::claimcheck::detail::make_check(&fn, #fn, __FILE__, __LINE__)
