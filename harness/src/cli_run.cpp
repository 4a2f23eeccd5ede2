// claimcheck run: a plan (the selection, the options, the run's configuration, all checked before a claim runs), a
// session (the claims in turn, under a watchdog, with progress and signals) and the artifacts (the report, its log
// and the files the checks kept).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "claimcheck/base/json_depth.h"
#include "claimcheck/base/process.h"
#include "claimcheck/base/sha256.h"
#include "cli_internal.h"
#include "compare.h"
#include "errors.h"
#include "expected.h"
#include "module.h"
#include "outcome.h"
#include "probe.h"
#include "records.h"
#include "registry.h"
#include "report.h"
#include "report_writers.h"
#include "runner.h"
#include "tolerance.h"

namespace claimcheck::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// A status as the console prints it ("PASS ", "TODO ").
std::string upper(Status s, bool not_impl) {
  if (not_impl) return "TODO ";
  std::string u = to_string(s);
  for (auto& c : u) c = static_cast<char>(std::toupper(c));
  while (u.size() < 5) u += ' ';
  return u;
}

// A benchmarks file (ci/bench_ratios.py's list of ratios), every row checked as compare reads it.
json load_benchmarks(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in || fs::is_directory(file)) throw InputError(file + ": field '(file)': cannot be read");
  json rows;
  try {
    rows = json::parse(in, depth_guard());
  } catch (const std::exception& ex) {
    throw InputError(file + ": field '(json)': " + ex.what());
  }
  check_benchmark_rows(rows, file, "rows");  // (a list of them)
  return rows;
}

// The report's folder, tried before any claim runs: a file in its place, a folder that cannot be made or written,
// a report file that is a folder found after an hour of claims would cost the hour.
void check_report_dir(const fs::path& dir) {
  const std::string d = dir.string();
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InputError(d + ": field '--report': is a file, not a folder");
  fs::create_directories(dir, ec);
  if (ec) throw InputError(d + ": field '--report': cannot be created (" + ec.message() + ")");
  for (const auto& w : all_writers())
    if (fs::is_directory(dir / w->filename(), ec))
      throw InputError((dir / w->filename()).string() + ": field '--report': is a folder, not a file");
  const fs::path probe = dir / ".claimcheck-write-test";
  std::ofstream(probe) << "x";
  const bool wrote = fs::exists(probe, ec);
  fs::remove(probe, ec);
  if (!wrote) throw InputError(d + ": field '--report': cannot be written");
}

// Everything a run is asked, read and checked before its first claim.
struct RunPlan {
  fs::path root, expected_dir;
  std::map<std::string, Expected> cat;
  Selection sel;
  std::vector<std::string> ids;
  unsigned long long seed = 0;
  std::string report_dir;  // "" where no report is written
  fs::path staging;        // where the checks' kept files wait for the report ("" without one)
  bool quiet = false;
  double timeout_s = 900;
  json benchmarks;  // null without --benchmarks
  std::string previous, fault;
  std::vector<std::string> statements;
  json run_config;  // the run's configuration record
};

RunPlan plan_run(const Args& a) {
  RunPlan p;
  p.root = repo_root(a);
  p.expected_dir = expected_dir_of(a, p.root);
  p.cat = load_catalogue(p.expected_dir);
  p.sel = selection_of(a);
  p.ids = select_claims(p.cat, p.sel);
  if (p.ids.empty()) throw InputError("the selection (--chapter, --claim and --label together) matches no claim");
  p.seed = std::stoull(one(a, "--seed", "20260929"));  // CLI11 has checked it
  p.report_dir = one(a, "--report");
  p.quiet = a.flags.count("--quiet") > 0;
  p.timeout_s = std::stod(one(a, "--timeout", "900"));  // (CLI11 has checked it)
  p.previous = one(a, "--previous");
  if (const std::string bench = one(a, "--benchmarks"); !bench.empty()) {
    if (p.report_dir.empty())
      throw InputError("--benchmarks: " + bench + " goes into the report: give --report DIR too");
    p.benchmarks = load_benchmarks(bench);
  }
  if (!p.report_dir.empty()) check_report_dir(p.report_dir);
  p.run_config = {{"command", "run"},
                  {"chapters", p.sel.chapters},
                  {"claims", p.sel.claims},
                  {"labels", p.sel.labels},
                  {"expected_dir", p.expected_dir.string()},
                  {"report_dir", p.report_dir},
                  {"seed", p.seed},
                  {"selected", p.ids.size()}};
  // Each check's own configuration: its expected file and the inputs it ran with (the run's config.json).
  json checks = json::object();
  for (const auto& id : p.ids) {
    const Expected& e = p.cat.at(id);
    const std::string rel = e.file.lexically_relative(p.root).generic_string();
    std::ifstream f(e.file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    Sha256 h;
    h.update(bytes);
    checks[id] = {{"expected_file", rel.empty() || rel.rfind("..", 0) == 0 ? e.file.generic_string() : rel},
                  {"expected_sha256", h.hex()},  // what `claimcheck matrix` tells apart across commits
                  {"inputs", e.inputs}};
  }
  p.run_config["checks"] = checks;
  const char* fault = std::getenv("CLAIMCHECK_FAULT");
  p.fault = fault ? fault : "";
  if (!p.fault.empty()) p.run_config["planted_fault"] = p.fault;
  p.statements = a.opts.count("--statement") ? a.opts.at("--statement") : std::vector<std::string>{};
  if (!p.statements.empty()) {
    if (p.ids.size() != 1)
      throw InputError("--statement: names statements of one claim; the selection picks " +
                       std::to_string(p.ids.size()));
    const Expected& e = p.cat.at(p.ids.front());
    std::vector<std::string> names;
    for (const auto& st : e.statements) names.push_back(st.name);
    for (const auto& n : p.statements)
      if (std::find(names.begin(), names.end(), n) == names.end())
        throw InputError("--statement " + n + ": " + e.file.string() + " states no '" + n + "'" +
                         did_you_mean(n, names) + " (its value and its also names)");
    p.run_config["statements"] = p.statements;
  }
  // Files the checks keep (checkpoints) are staged beside the report and moved to artifacts/ with it, so that a
  // run that stops half-way leaves the previous report's artifacts whole.
  p.staging = p.report_dir.empty() ? fs::path() : fs::path(p.report_dir) / ".artifacts.tmp";
  return p;
}

// The run's records (built once, on the first claim that asks, with the checkpoints kept so far added as claims end).
class Records {
 public:
  Records(const RunPlan& p, const HardwareInfo* hw)
      : in_{p.root,
            p.expected_dir,
            p.run_config,
            p.seed,
            hw,
            p.report_dir.empty() ? json{{"run_log", "stdout"}, {"checkpoints", json::array()}}
                                 : json{{"run_log", "run.log"}, {"checkpoints", json::array()}}} {}
  json get() {
    if (cache_.is_null()) cache_ = build_records(in_);
    return cache_;
  }
  void add_checkpoint(const json& entry) {
    in_.logs["checkpoints"].push_back(entry);
    if (!cache_.is_null()) cache_["logs"]["checkpoints"].push_back(entry);
  }

 private:
  RecordInputs in_;
  json cache_;
};

// The report of `claims` into the plan's folder: paths made relative to the checkout, the benchmarks, the links to
// the repository, the comparison with --previous; then its log, and the checks' kept files moved in.
void write_run_report(const RunPlan& p, std::vector<ClaimResult> claims, json records, const std::string& log) {
  Report rep;
  rep.generated_at = now_utc();
  rep.records = std::move(records);
  rep.claims = std::move(claims);
  // Paths inside the checkout, relative to it (a report names no absolute path of the clone it ran in: two
  // machines' reports merge, and their links work where the repository is served): each check's source line and
  // details, the expected folder.
  {
    std::error_code ec;
    const std::string prefix = fs::weakly_canonical(p.root, ec).generic_string() + "/";
    std::function<void(json&)> strip = [&](json& j) {
      if (j.is_string() && j.get<std::string>().rfind(prefix, 0) == 0) j = j.get<std::string>().substr(prefix.size());
      if (j.is_structured())
        for (auto& x : j) strip(x);
    };
    if (!ec && prefix.size() > 1) {
      for (auto& c : rep.claims) {
        json loc = c.check_location;
        strip(loc);
        c.check_location = loc.get<std::string>();
        strip(c.details);
      }
      if (rep.records.contains("config")) strip(rep.records["config"]["expected_dir"]);
    }
  }
  if (!p.benchmarks.is_null()) rep.benchmarks = p.benchmarks;
  // Links from report.html to the repository's files: relative, so that the page works wherever the two move
  // together.
  std::error_code ec;
  const fs::path abs_root = fs::weakly_canonical(p.root, ec);
  const fs::path abs_report = fs::weakly_canonical(fs::absolute(p.report_dir), ec);
  const fs::path up = abs_root.lexically_relative(abs_report);
  if (!abs_root.empty() && !up.empty()) {
    rep.source_root = abs_root.generic_string();
    rep.root_link = up == "." ? "" : up.generic_string() + "/";
    if (rep.root_link.empty()) rep.root_link = "./";
  }
  // A previous report that cannot be read does not cost this run its report: one line says why.
  if (!p.previous.empty()) {
    try {
      rep.comparison = compare_reports(load_report_for_compare(p.previous), p.previous, report_to_json(rep),
                                       (fs::path(p.report_dir) / "report.json").string(), {});
    } catch (const std::exception& ex) {
      std::cerr << "claimcheck: --previous: not compared: " << ex.what() << "\n";
    }
  }
  write_report(p.report_dir, rep);
  write_files_atomically({{fs::path(p.report_dir) / "run.log", log}});
  // The report written, the previous run's artifacts give way to this one's (whether or not it kept any).
  fs::remove_all(fs::path(p.report_dir) / "artifacts");
  if (fs::exists(p.staging)) fs::rename(p.staging, fs::path(p.report_dir) / "artifacts");
}

// The claims in turn. Progress on stderr (stdout keeps one line per claim that ended): on a terminal one line that
// says which claim runs and for how long, updated each second; elsewhere (make, tee, CI) a line as each claim
// starts. A watchdog gives up on a check that runs past --timeout: it stops the check's children, writes the report
// of the claims that ended with this one as an error, and exits 2 (a hung driver or kernel does not hang the run).
// Interrupted (Ctrl-C, a CI job's cancel), the checks' children are stopped, then the signal does what it would.
class RunSession {
 public:
  RunSession(const RunPlan& p, const HardwareInfo& hw, Capabilities& caps)
      : p_(p), caps_(caps), records_(p, &hw), live_(!p.quiet && ::isatty(STDERR_FILENO)) {
    in_ = RunContextInputs{p.root,  p.seed,       &hw,          [this]() { return records_.get(); },
                           p.fault, p.sel.labels, p.statements, p.staging};
  }

  std::vector<ClaimResult> run() {
    if (!p_.staging.empty()) fs::remove_all(p_.staging);
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
      std::signal(sig, [](int sig) {
        stop_children(SIGKILL);
        std::signal(sig, SIG_DFL);
        std::raise(sig);
      });
    std::thread watchdog([this] { watch(); });
    struct Join {
      RunSession& s;
      std::thread& t;
      ~Join() {
        {
          std::lock_guard<std::mutex> l(s.mu_);
          s.finished_ = true;
        }
        s.cv_.notify_all();
        t.join();
      }
    } join{*this, watchdog};
    for (const auto& id : p_.ids) {
      {
        std::lock_guard<std::mutex> l(mu_);
        running_ = id;
        started_ = std::chrono::steady_clock::now();
        if (live_)
          std::fprintf(stderr, "\r\033[K[%zu/%zu] %s …", index_ + 1, p_.ids.size(), id.c_str());
        else if (!p_.quiet)
          std::fprintf(stderr, "[%zu/%zu] %s started\n", index_ + 1, p_.ids.size(), id.c_str());
      }
      ClaimResult done = run_claim_watched(p_.cat.at(id), in_, caps_);
      {
        std::lock_guard<std::mutex> l(mu_);
        results_.push_back(std::move(done));
        running_.clear();
        ++index_;
        if (live_) std::fprintf(stderr, "\r\033[K");
      }
      ended(results_.back());
    }
    const std::string sum = summary_line(summarize(results_), false);
    log_ << sum << "\n";
    if (!p_.quiet || p_.ids.size() > 1) std::cout << sum << "\n";
    return results_;
  }

  json records() { return records_.get(); }
  std::string log() const { return log_.str(); }

 private:
  // A claim ended: its kept files into the records (where they will be once the report is written), its line.
  void ended(ClaimResult& r) {
    if (r.details.contains("kept_files")) {
      for (auto& k : r.details["kept_files"]) {
        if (!p_.staging.empty())
          k["path"] =
              ("artifacts" / fs::path(k["path"].get<std::string>()).lexically_relative(p_.staging)).generic_string();
        json entry = k;
        entry["claim"] = r.id;
        records_.add_checkpoint(entry);
      }
    }
    std::string line = upper(r.status, r.not_implemented) + " " + r.id + "  " + r.reason;
    // a headline no bug in a model or kernel can move says so
    if (const std::string b = headline_basis(r); !b.empty()) line += "  [" + basis_label(b) + "]";
    log_ << line << "\n" << std::flush;
    const bool bad = r.status == Status::fail || r.status == Status::error || r.status == Status::xpass;
    // Flushed as each claim ends: a pipe (make, tee, CI) sees it then, not when the buffer fills.
    if (!p_.quiet || bad || p_.ids.size() == 1) std::cout << line << "\n" << std::flush;
  }

  void watch() {
    std::unique_lock<std::mutex> l(mu_);
    while (!finished_) {
      cv_.wait_for(l, std::chrono::seconds(1));
      if (finished_ || running_.empty()) continue;
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      if (el > p_.timeout_s) give_up();  // does not return
      if (live_) std::fprintf(stderr, "\r\033[K[%zu/%zu] %s … %.0f s", index_ + 1, p_.ids.size(), running_.c_str(), el);
    }
  }

  // (Under mu_.) The claim running now passed --timeout: its children stopped, the report of the claims before it
  // and this one as an error written, exit 2.
  [[noreturn]] void give_up() {
    const std::string id = running_;
    const int n = stop_children(SIGKILL);
    std::fprintf(
        stderr, "%sclaimcheck: %s did not end within --timeout %g s: stopped%s; %zu claim(s) after it not run\n",
        live_ ? "\r\033[K" : "", id.c_str(), p_.timeout_s,
        n ? (" with " + std::to_string(n) + " child process group(s)").c_str() : "", p_.ids.size() - index_ - 1);
    std::cout << "ERROR " << id << "  did not end within --timeout " << fmt(p_.timeout_s) << " s\n" << std::flush;
    if (!p_.report_dir.empty()) {
      json rec;
      try {
        rec = records_.get();
      } catch (const std::exception& ex) {
        rec = {{"error", std::string("the records could not be built: ") + ex.what()}};
      }
      std::vector<ClaimResult> claims = results_;
      ClaimResult hung;
      const Expected& e = p_.cat.at(id);
      hung.id = id;
      hung.chapter = e.chapter;
      hung.chapter_title = e.chapter_title;
      hung.title = e.title;
      hung.source = e.source;
      hung.status = Status::error;
      hung.reason = "did not end within --timeout " + fmt(p_.timeout_s) + " s: stopped, with its children";
      claims.push_back(hung);
      try {
        write_run_report(p_, claims, rec, log_.str());
        std::fprintf(stderr, "claimcheck: the report of the %zu claim(s) before it and this error written to %s/\n",
                     results_.size(), p_.report_dir.c_str());
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "claimcheck: the report could not be written: %s\n", ex.what());
      }
    }
    std::fflush(nullptr);
    std::_Exit(2);
  }

  const RunPlan& p_;
  Capabilities& caps_;
  Records records_;
  RunContextInputs in_;
  const bool live_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::string running_;  // the claim that runs now
  std::size_t index_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::vector<ClaimResult> results_;
  std::ostringstream log_;
};

}  // namespace

int cmd_run(const Args& a) {
  const RunPlan p = plan_run(a);
  const HardwareInfo hw = probe_hardware(p.root / "reference/data/hardware/cpu-uarch.json");
  Capabilities caps(&hw);
  // The LibTorch checks module is loaded before anything runs, and only when a check in it will run here.
  for (const auto& id : p.ids) {
    if (!p.cat.at(id).pending && needs_module(id, p.sel.labels, caps)) {
      load_module(id);
      refuse_selectors_under_test(p.cat);  // the module's checks declare their derived values now
      break;
    }
  }
  RunSession session(p, hw, caps);
  const std::vector<ClaimResult> results = session.run();
  if (!p.report_dir.empty()) {
    write_run_report(p, results, session.records(), session.log());
    if (!p.quiet) std::cout << "report written to " << fs::absolute(p.report_dir).string() << "/\n";
  }
  return exit_status(results);
}

}  // namespace claimcheck::cli
