// What the command line (cli.cpp: its declaration with CLI11, list, run, compare and the dispatch) shares with the
// subcommand in a file of its own (cli_account.cpp): the options a subcommand reads, and the repository it reads.
#pragma once
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

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

// claimcheck account (cli_account.cpp): the ledger of a config.json, as text or (--json) JSON. Returns the exit status.
int cmd_account(const Args& a);

}  // namespace claimcheck::cli
