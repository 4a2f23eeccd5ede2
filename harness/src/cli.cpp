// claimcheck list | run | account | compare | matrix | site — the command line (design.md): its declaration (every
// subcommand's options together, CLI11, so that their names, checks and help are read in one place), list, compare,
// matrix, site and the dispatch; run is in cli_run.cpp, account in cli_account.cpp (what they share: cli_internal.h).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "cli_internal.h"
#include "compare.h"
#include "errors.h"
#include "expected.h"
#include "matrix.h"
#include "outcome.h"
#include "probe.h"
#include "registry.h"
#include "report.h"
#include "runner.h"
#include "site.h"
#include "tolerance.h"

#ifndef CLAIMCHECK_SOURCE_DIR
#define CLAIMCHECK_SOURCE_DIR "."
#endif

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

namespace cli {

std::string one(const Args& a, const std::string& k, const std::string& dflt) {
  auto it = a.opts.find(k);
  return it == a.opts.end() || it->second.empty() ? dflt : it->second.front();
}

fs::path repo_root(const Args& a) {
  std::string r = one(a, "--root");
  if (r.empty()) {
    const char* env = std::getenv("CLAIMCHECK_ROOT");
    r = env && *env ? env : CLAIMCHECK_SOURCE_DIR;
  }
  if (!fs::is_directory(r)) throw InputError("--root: '" + r + "' is not a directory");
  return fs::absolute(r);
}

Selection selection_of(const Args& a) {
  Selection s;
  auto get = [&](const char* k) { return a.opts.count(k) ? a.opts.at(k) : std::vector<std::string>{}; };
  s.chapters = get("--chapter");
  s.claims = get("--claim");
  s.labels = get("--label");
  return s;
}

// Loads expected files and checks that every registered check has one.
std::map<std::string, Expected> load_catalogue(const fs::path& dir) {
  validate_registry();
  auto cat = load_expected_dir(dir);
  register_drivers(cat);  // the claims whose check is a Python driver named in their expected file
  for (const auto& c : registry())
    if (!cat.count(c.id))
      throw InputError(location(c) + ": check '" + c.id + "' has no expected file in " + dir.string());
  require_from_expected(cat);
  refuse_selectors_under_test(cat);
  return cat;
}

fs::path expected_dir_of(const Args& a, const fs::path& root) {
  const std::string e = one(a, "--expected");
  return e.empty() ? root / "expected" : fs::absolute(e);
}

}  // namespace cli

namespace {

using cli::Args;
using cli::cmd_account;
using cli::cmd_run;
using cli::expected_dir_of;
using cli::load_catalogue;
using cli::one;
using cli::repo_root;
using cli::selection_of;

const char* kExit =
    "exit: 0 ok; 1 a claim failed or passed unexpectedly; 2 bad input or a check error; 77 everything skipped";

// An integer in [1, 2^63): "16" yes; "0", "-3", "1.5", "1e3", "99999999999999999999" no.
const CLI::Validator kPositiveInteger(
    [](std::string& v) -> std::string {
      const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
      errno = 0;
      const long long n = digits ? std::strtoll(v.c_str(), nullptr, 10) : 0;
      return digits && errno == 0 && n > 0 ? std::string() : "'" + v + "' is not a positive integer";
    },
    "POSITIVE INTEGER");
const CLI::Validator kNonNegativeInteger(
    [](std::string& v) -> std::string {
      const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
      errno = 0;
      if (digits) std::strtoull(v.c_str(), nullptr, 10);
      return digits && errno == 0 ? std::string() : "'" + v + "' is not an integer in [0, 2^64)";
    },
    "INTEGER >= 0");

// A finite number in [lo, hi] (CLI::Range lets "nan" through: a timeout of NaN never fires).
CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        const bool ok = !v.empty() && end && *end == '\0' && std::isfinite(d) && d >= lo && d <= hi;
        return ok ? std::string() : "'" + v + "' is not a number in [" + fmt(lo) + ", " + fmt(hi) + "]";
      },
      "NUMBER in [" + fmt(lo) + ", " + fmt(hi) + "]");
}
// An option's value is never empty: `--report ''` read as no --report wrote no report and exited 0.
const CLI::Validator kNonEmpty([](std::string& v) { return v.empty() ? std::string("an empty value") : std::string(); },
                               "");

// The command line, declared with CLI11 (subcommands, validation, help). Throws CLI::Error subclasses.
struct CommandLine {
  CLI::App app{"claimcheck: every claim of the series, computed, compared with the stated figure, able to fail",
               "claimcheck"};
  Args args;

  CommandLine() {
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("claimcheck ") + CLAIMCHECK_VERSION);
    app.footer(kExit);
    auto* list = app.add_subcommand("list", "ids, kinds, requirements, and whether this build can run them");
    auto* run = app.add_subcommand("run", "runs the selection; writes report.json, report.md, report.html, junit.xml");
    auto* account =
        app.add_subcommand("account", "the memory and latency ledger of a Hugging Face decoder config.json");
    auto* compare =
        app.add_subcommand("compare", "what changed between two report.json: statuses, figures, benchmarks");
    auto* matrix = app.add_subcommand("matrix", "which claims hold on which machines: a matrix of report.json files");
    auto* site = app.add_subcommand("site", "the history of every machine's reports as a static site");
    for (auto* sub : {list, run}) {
      repeated(sub, "--chapter", "chNN (alternatives when repeated)");
      repeated(sub, "--label", "a label: analytic, numeric, measured, phenomenon, libtorch, python, gpu, ...");
      repeated(sub, "--claim", "a claim id or a glob such as 'ch04.*'");
      single(sub, "--expected", "DIR", "read expected values from DIR instead of expected/");
    }
    flag(list, "--json", "print the list as JSON");
    single(run, "--report", "DIR", "write the report into DIR");
    single(run, "--benchmarks", "FILE", "benchmark ratios (ci/bench_ratios.py output) to put in the report");
    single(run, "--seed", "N", "the seed of every seeded check (default 20260929)")->check(kNonNegativeInteger);
    flag(run, "--quiet", "print failures and the summary only");
    repeated(run, "--statement",
             "judge only this statement of the one claim selected ('value' or an `also` name; repeatable): a "
             "planted-fault test's run; the claim reads partial at best");
    single(run, "--previous", "FILE",
           "a previous report.json: report.html shows what changed since (claimcheck compare)");
    single(run, "--timeout", "SECONDS",
           "give up on a check that runs longer (default 900): its children are stopped, "
           "the report keeps the claims before it, exit 2")
        ->check(finite_range(1.0, 1e6));
    single(account, "--config", "FILE", "a Hugging Face config.json")->required();
    single(account, "--hardware", "FILE", "a hardware spec (default: reference/data/hardware/h100-sxm.json)");
    single(account, "--lora-r", "N", "LoRA rank (default 16)")->check(kPositiveInteger);
    single(account, "--lora-targets", "a,b,...", "LoRA target modules (default: all linear projections)");
    single(account, "--quant", "FILE", "a quantisation format (default: reference/data/quant/nf4-bnb-default.json)");
    single(account, "--tokens", "N", "prefill and activation tokens (default 4096)")->check(kPositiveInteger);
    single(account, "--batch", "N", "batch for activations (default 1)")->check(kPositiveInteger);
    flag(account, "--json", "print the ledger as JSON");
    single(compare, "old", "OLD", "the earlier report.json")->required();
    single(compare, "new", "NEW", "the later report.json")->required();
    single(compare, "--json", "FILE", "write the comparison as JSON (schema claimcheck.compare/1) to FILE");
    single(compare, "--markdown", "FILE", "write the Markdown to FILE instead of stdout");
    single(compare, "--margin", "R", "the smallest relative move of a benchmark ratio that counts (default 0.05)")
        ->check(finite_range(1e-6, 1.0));
    flag(compare, "--all",
         "also judge claims in one report only, and claims the two reports judged on different "
         "statements (a partial run); by default they are listed, not judged");
    compare->footer(
        "exit: 0 no regression; 1 a regression (a claim's status, a figure's comparison, a benchmark "
        "slower beyond its noise); 2 bad input");
    matrix
        ->add_option_function<std::vector<std::string>>(
            "reports", [this](const std::vector<std::string>& v) { args.opts["reports"] = v; },
            "report.json files, one or more per machine (different commits of one machine are allowed)")
        ->type_name("REPORT")
        ->required();
    single(matrix, "--out", "DIR",
           "write matrix.json, matrix.md, matrix.html and headline.md (the README's table) into DIR")
        ->required();
    single(matrix, "--links-from", "DIR",
           "write the links to the reports relative to DIR (default: --out; the build writes docs/matrix.md so)");
    matrix->footer(
        "exit: 0 written; 2 bad input (not a report, an unknown schema, two reports of the same machine "
        "and commit)");
    single(site, "history", "HISTORY", "a folder of reports: one folder per machine, one per run (gh-pages)")
        ->required();
    single(site, "--out", "DIR",
           "write index.html (the matrix), machines/*.html (the timelines) and site.json into DIR")
        ->required();
    site->footer("exit: 0 written; 2 bad input (no report.json under HISTORY, a file that is not a report)");
    for (auto* sub : {list, run, account})
      single(sub, "--root", "DIR", "the repository (default: $CLAIMCHECK_ROOT, else the source tree of this build)");
  }

  CLI::Option* single(CLI::App* sub, const std::string& name, const std::string& type, const std::string& help) {
    return sub
        ->add_option_function<std::string>(
            name, [this, name](const std::string& v) { args.opts[name] = {v}; }, help)
        ->type_name(type)
        ->check(kNonEmpty);
  }
  void repeated(CLI::App* sub, const std::string& name, const std::string& help) {
    sub->add_option_function<std::vector<std::string>>(
           name, [this, name](const std::vector<std::string>& v) { args.opts[name] = v; }, help)
        ->type_name("X")
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  }
  void flag(CLI::App* sub, const std::string& name, const std::string& help) {
    sub->add_flag_callback(
        name, [this, name] { args.flags.insert(name); }, help);
  }

  const Args& parse(int argc, char** argv) {
    const std::string first = argc >= 2 ? argv[1] : "";
    if (first == "help") throw CLI::CallForHelp();
    const std::vector<std::string> commands = {"list", "run", "account", "compare", "matrix", "site"};
    if (!first.empty() && first[0] != '-' && std::find(commands.begin(), commands.end(), first) == commands.end())
      throw InputError("unknown command '" + first + "'" + did_you_mean(first, commands) +
                       " (list, run, account, compare, matrix, site); see --help");
    app.parse(argc, argv);
    args.command = app.get_subcommands().front()->get_name();
    return args;
  }
};

// ---- list ---------------------------------------------------------------------
int cmd_list(const Args& a) {
  const fs::path root = repo_root(a);
  const auto cat = load_catalogue(expected_dir_of(a, root));
  const auto ids = select_claims(cat, selection_of(a));
  const HardwareInfo hw = probe_hardware(root / "reference/data/hardware/cpu-uarch.json");
  Capabilities caps(&hw);
  json out = json::array();
  for (const auto& id : ids) {
    const Expected& e = cat.at(id);
    std::string runnable = "yes";
    if (e.pending) {
      // What this machine lacks is said even before the check exists: a GPU claim skips here either way.
      std::string lacks;
      for (const auto& name : e.requirements) {
        Requirement r;
        if (parse_requirement(name, &r))
          if (auto why = caps.missing(r)) lacks += "skips here: needs " + name + " (" + *why + "); ";
      }
      runnable = lacks + "not implemented yet: " + *e.pending;
    } else if (const CheckInfo* c = find_check(id)) {
      for (Requirement r : c->needs)
        if (auto why = caps.missing(r)) {
          runnable = std::string("skips: needs ") + to_string(r) + " (" + *why + ")";
          break;
        }
      if (const CheckInfo* part = find_part(id, "measured"); part && runnable == "yes")
        for (Requirement r : part->needs)
          if (auto why = caps.missing(r)) {
            runnable = std::string("partly: its measured part needs ") + to_string(r) + " (" + *why + ")";
            break;
          }
    } else {
      runnable = "error: no check registered";
    }
    out.push_back(
        {{"id", id}, {"kind", e.kinds}, {"requires", e.requirements}, {"runnable", runnable}, {"title", e.title}});
  }
  if (a.flags.count("--json")) {
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace)
              << "\n";  // a non-UTF-8 argument echoed: replaced, not thrown
    return 0;
  }
  for (const auto& o : out) {
    std::string kinds, reqs;
    for (const auto& k : o["kind"]) kinds += (kinds.empty() ? "" : "+") + k.get<std::string>();
    for (const auto& r : o["requires"]) reqs += (reqs.empty() ? "" : ",") + r.get<std::string>();
    std::printf("%-34s %-20s %-16s %s\n", o["id"].get<std::string>().c_str(), kinds.c_str(),
                reqs.empty() ? "-" : reqs.c_str(), o["runnable"].get<std::string>().c_str());
  }
  std::printf("%zu claims\n", out.size());
  return 0;
}

// ---- compare ------------------------------------------------------------------
int cmd_compare(const Args& a) {
  const std::string old_file = one(a, "old"), new_file = one(a, "new");
  const json oldr = load_report_for_compare(old_file), newr = load_report_for_compare(new_file);
  const json cmp = compare_reports(oldr, old_file, newr, new_file,
                                   {std::stod(one(a, "--margin", "0.05")), a.flags.count("--all") == 0});
  const std::string md = compare_markdown(cmp), json_file = one(a, "--json"), md_file = one(a, "--markdown");
  // An output over an input would lose the report it compared.
  for (const auto& [out, field] : {std::pair{json_file, "--json"}, std::pair{md_file, "--markdown"}}) {
    std::error_code ec;
    for (const std::string& in : {old_file, new_file})
      if (!out.empty() && fs::equivalent(out, in, ec))
        throw InputError(out + ": field '" + field + "': is the report " + (in == old_file ? "OLD" : "NEW") +
                         " it compares");
  }
  std::vector<std::pair<fs::path, std::string>> files;
  if (!json_file.empty()) files.emplace_back(json_file, cmp.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  if (!md_file.empty()) files.emplace_back(md_file, md);
  write_files_atomically(files);
  if (md_file.empty()) std::cout << md;
  return cmp["regression"].get<bool>() ? 1 : 0;
}

// ---- matrix -------------------------------------------------------------------
int cmd_matrix(const Args& a) {
  const fs::path out = one(a, "--out");
  std::vector<MatrixInput> inputs;
  const fs::path links_from = one(a, "--links-from").empty() ? out : fs::path(one(a, "--links-from"));
  for (const auto& f : a.opts.at("reports")) inputs.push_back(load_matrix_input(f, links_from));
  const json m = build_matrix(inputs);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw InputError(out.string() + ": field '--out': cannot be created (" + ec.message() + ")");
  write_files_atomically({{out / "matrix.json", m.dump(2, ' ', false, json::error_handler_t::replace) + "\n"},
                          {out / "matrix.md", matrix_markdown(m)},
                          {out / "headline.md", matrix_headline_markdown(m)},
                          {out / "matrix.html", matrix_html(m)}});
  std::cout << "matrix of " << inputs.size() << " report(s) written to " << out.generic_string() << "/\n";
  return 0;
}

// ---- site ---------------------------------------------------------------------
int cmd_site(const Args& a) {
  const fs::path out = one(a, "--out");
  const json site = write_site(one(a, "history"), out);
  std::size_t runs = 0;
  for (const auto& m : site["machines"]) runs += m["runs"].size();
  std::cout << "site of " << site["machines"].size() << " machine(s), " << runs << " run(s) written to "
            << out.generic_string() << "/\n";
  return 0;
}

}  // namespace

int cli_main(int argc, char** argv) {
  CommandLine cl;
  try {
    const Args& a = cl.parse(argc, argv);
    if (a.command == "list") return cmd_list(a);
    if (a.command == "run") return cmd_run(a);
    if (a.command == "compare") return cmd_compare(a);
    if (a.command == "matrix") return cmd_matrix(a);
    if (a.command == "site") return cmd_site(a);
    return cmd_account(a);
  } catch (const CLI::Success& e) {  // --help, --version
    return cl.app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (auto& c : msg)
      if (c == '\n') c = ' ';
    std::cerr << "claimcheck: " << msg << "; see --help\n";
    return 2;
  } catch (const std::exception& e) {  // InputError, ref::SpecError and the rest: already one line naming the file
    std::cerr << "claimcheck: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace claimcheck
