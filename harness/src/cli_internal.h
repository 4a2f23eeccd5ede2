// What the command line (cli.cpp: its declaration with CLI11, list, compare, matrix, site and the dispatch) shares
// with the subcommands in files of their own (cli_run.cpp, cli_account.cpp): the options a subcommand reads, the
// repository and the expected files it reads.
#pragma once
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "expected.h"
#include "outcome.h"
#include "runner.h"

namespace claimcheck::cli {

// What the subcommands read: the options given (each occurrence of a repeatable one appended), and the flags.
struct Args {
  std::string command;
  std::map<std::string, std::vector<std::string>> opts;
  std::set<std::string> flags;
};

// The first value of option `k`, `dflt` where it was not given.
std::string one(const Args& a, const std::string& k, const std::string& dflt = "");
// --root, else $CLAIMCHECK_ROOT, else the source tree of this build; an InputError unless it is a directory.
std::filesystem::path repo_root(const Args& a);

// The selection of --chapter, --claim and --label.
Selection selection_of(const Args& a);
// The expected files of `dir`, each registered check's among them (an InputError where one lacks its file), the
// Python drivers registered, the selectors refused where a variant reads the code under test.
std::map<std::string, Expected> load_catalogue(const std::filesystem::path& dir);
// --expected, else the checkout's expected/.
std::filesystem::path expected_dir_of(const Args& a, const std::filesystem::path& root);

// claimcheck run (cli_run.cpp): plans the run, runs the claims, writes the report. Returns the exit status.
int cmd_run(const Args& a);
// claimcheck account (cli_account.cpp): the ledger of a config.json, as text or (--json) JSON. Returns the exit status.
int cmd_account(const Args& a);

}  // namespace claimcheck::cli
