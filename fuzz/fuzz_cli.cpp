// Fuzz target: the command line (claimcheck::cli_main, what bin/claimcheck runs), for every subcommand that runs no
// claim: account, compare, list, help, --version.
//
// Input: argument lines (newline- or NUL-separated), optionally followed by a line "@@" and up to three file
// contents separated by lines "@@". In the arguments, @0 @1 @2 stand for those files; @llama @qwen @scaled (configs),
// @h100 @h200 (hardware specs), @nf4 @nf4-64 @flat4 (quantisation formats) for copies of the repository's files.
// Everything happens in a private scratch folder (the working directory): an argument holding '/' is refused, so
// that `compare --json FILE` writes there only; `run` is refused (it runs claims).
//
// Expected: exit 0, 1 (compare: a regression) or 2 with one line on stderr. A finding: a crash, undefined behaviour,
// another exit status, an exit 2 whose message is an untyped library exception (nlohmann's "[json.exception...",
// std::stoll's "stoll", ...) rather than the project's "<file>: field '<f>': ..." or a command-line error, and an
// exit 0 from `account` whose ledger (--json) holds a negative number or a null (NaN or infinity).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_check.h"

namespace claimcheck {
int cli_main(int argc, char** argv);
}

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path g_dir;                              // the scratch folder, also the working directory
std::map<std::string, std::string> g_alias;  // @name -> file in g_dir
std::set<std::string> g_keep;                // what stays in g_dir between inputs

void cleanup() {
  std::error_code ec;
  if (!g_dir.empty()) fs::remove_all(g_dir, ec);
}

void setup() {
  // In $TMPDIR where set (ci/sanitize.sh: the build folder, where what a crash leaves behind stays), else memory.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmpl = tmpdir && *tmpdir ? tmpdir : fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  tmpl += "/claimcheck-fuzz-cli-XXXXXX";
  if (!mkdtemp(tmpl.data())) claimcheck::fuzz::finding("cannot create a scratch folder " + tmpl);
  g_dir = tmpl;
  std::atexit(cleanup);
  const fs::path data = fs::path(CLAIMCHECK_SOURCE_DIR) / "reference/data";
  const std::map<std::string, std::string> files = {{"@llama", "configs/llama-3-8b.json"},
                                                    {"@qwen", "configs/qwen2.5-0.5b.json"},
                                                    {"@scaled", "configs/llama-scaled-ch04.json"},
                                                    {"@h100", "hardware/h100-sxm.json"},
                                                    {"@h200", "hardware/h200.json"},
                                                    {"@nf4", "quant/nf4-bnb-default.json"},
                                                    {"@nf4-64", "quant/nf4-absmax64.json"},
                                                    {"@flat4", "quant/flat-4bit.json"}};
  for (const auto& [alias, rel] : files) {
    const fs::path to = g_dir / fs::path(rel).filename();
    fs::copy_file(data / rel, to, fs::copy_options::overwrite_existing);
    g_alias[alias] = to.string();
    g_keep.insert(to.filename().string());
  }
  for (int i = 0; i < 3; ++i) {
    const std::string name = "input" + std::to_string(i) + ".json";
    g_alias["@" + std::to_string(i)] = (g_dir / name).string();
    g_keep.insert(name);
  }
  if (chdir(g_dir.c_str()) != 0) claimcheck::fuzz::finding("cannot enter " + g_dir.string());
  unsetenv("CLAIMCHECK_ROOT");
  unsetenv("CLAIMCHECK_FAULT");
  // `list` prints with printf: stdout goes nowhere (std::cout is captured per call below).
  if (std::FILE* null = std::freopen("/dev/null", "w", stdout); !null)
    claimcheck::fuzz::finding("cannot silence stdout");
}

struct Result {
  int rc = 0;
  std::string out, err;
};

Result call(std::vector<std::string> args) {
  args.insert(args.begin(), "claimcheck");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  auto* cout_buf = std::cout.rdbuf(out.rdbuf());
  auto* cerr_buf = std::cerr.rdbuf(err.rdbuf());
  Result r;
  try {
    r.rc = claimcheck::cli_main(static_cast<int>(args.size()), argv.data());
  } catch (...) {
    std::cout.rdbuf(cout_buf);
    std::cerr.rdbuf(cerr_buf);
    claimcheck::fuzz::finding("an exception escaped cli_main");
  }
  std::cout.rdbuf(cout_buf);
  std::cerr.rdbuf(cerr_buf);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string joined(const std::vector<std::string>& args) {
  std::string s = "claimcheck";
  for (const auto& a : args) s += " '" + a + "'";
  return s;
}

// Every number of the ledger is a count, a size, a time, a rate or a fraction: none is negative, none NaN or
// infinite (nlohmann writes those as null).
void walk(const json& j, const std::string& path, const std::string& cmd) {
  if (j.is_null()) claimcheck::fuzz::finding(cmd + ": exit 0 with " + path + " = null (NaN or infinite)");
  if (j.is_number() && !(j.get<double>() >= 0))
    claimcheck::fuzz::finding(cmd + ": exit 0 with " + path + " = " + j.dump());
  if (j.is_object())
    for (const auto& [k, v] : j.items()) walk(v, path + "." + k, cmd);
  if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) walk(j[i], path + "[" + std::to_string(i) + "]", cmd);
}

void check_ledger(const std::string& out, const std::string& cmd) {
  const json j = json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) claimcheck::fuzz::finding(cmd + ": exit 0 without a JSON ledger");
  walk(j, "", cmd);
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setup();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> files;
  if (const auto at = text.find("\n@@\n"); at != std::string::npos) {
    std::string rest = text.substr(at + 4);
    text.resize(at);
    for (std::size_t pos; files.size() < 2 && (pos = rest.find("\n@@\n")) != std::string::npos;) {
      files.push_back(rest.substr(0, pos));
      rest = rest.substr(pos + 4);
    }
    files.push_back(rest);
  }
  std::vector<std::string> args;
  std::string cur;
  for (char ch : text + '\n') {
    if (ch == '\n' || ch == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!args.empty() && args.back().empty()) args.pop_back();
  if (args.size() > 32) return -1;
  for (auto& a : args) {
    if (a == "run" || a.find('/') != std::string::npos) return -1;  // not fuzzed here: refused as an input
    if (auto it = g_alias.find(a); it != g_alias.end()) a = it->second;
  }
  for (std::size_t i = 0; i < 3; ++i)
    std::ofstream(g_alias["@" + std::to_string(i)], std::ios::binary | std::ios::trunc)
        << (i < files.size() ? files[i] : std::string());

  const Result r = call(args);
  const std::string cmd = joined(args);
  if (r.rc != 0 && r.rc != 1 && r.rc != 2) claimcheck::fuzz::finding(cmd + ": exit " + std::to_string(r.rc));
  if (r.rc == 1 && (args.empty() || args[0] != "compare")) claimcheck::fuzz::finding(cmd + ": exit 1 outside compare");
  if (r.rc == 2) {
    if (!starts_with(r.err, "claimcheck: ") || r.err.find('\n') + 1 != r.err.size())
      claimcheck::fuzz::finding(cmd + ": exit 2 without one line 'claimcheck: ...' on stderr: " + r.err);
    const std::string msg = r.err.substr(12);
    for (const char* untyped :
         {"[json.exception.", "stoll", "stoull", "stod", "stoi", "map::at", "vector::", "basic_string",
          "filesystem error", "std::bad_alloc", "bad optional access", "std::bad_variant_access"})
      if (starts_with(msg, untyped) && msg.find(": field '") == std::string::npos)
        claimcheck::fuzz::finding(cmd + ": an untyped library exception reached the user: " + r.err);
  }
  if (r.rc == 0 && !args.empty() && args[0] == "account") {
    // A ledger, as JSON ("{") or as text ("config ..."); anything else is help (-h, -hardware = -h -a -r ...).
    if (starts_with(r.out, "{")) {
      check_ledger(r.out, cmd);
    } else if (starts_with(r.out, "config ")) {  // the text ledger prints the same figures: ask for them as JSON
      auto again = args;
      again.insert(again.begin() + 1, "--json");  // right after `account`: not after a "--"
      const Result j = call(again);
      if (j.rc != 0 || !starts_with(j.out, "{"))
        claimcheck::fuzz::finding(cmd + ": a text ledger, but exit " + std::to_string(j.rc) +
                                  " and no JSON with --json: " + j.err);
      check_ledger(j.out, joined(again));
    }
  }
  // What compare --json/--markdown wrote: gone before the next input.
  for (const auto& e : fs::directory_iterator(g_dir)) {
    if (g_keep.count(e.path().filename().string())) continue;
    std::error_code ec;
    fs::remove_all(e.path(), ec);
  }
  return 0;
}
