// Starting another program from an argument vector (posix_spawnp and a pipe), never through a shell: a path or
// argument with a quote, a ';' or a '$(...)' reaches the program as it is, and none is ever run as a command.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace claimcheck {

struct ProcessOptions {
  bool merge_stderr = false;  // stderr into the captured stdout (2>&1); otherwise it goes to /dev/null
  // Added to the parent's environment (a name already there is replaced).
  std::vector<std::pair<std::string, std::string>> env;
  // Removed from the child's environment (after `env` is applied, so a name in both is removed).
  std::vector<std::string> unset;
};

struct ProcessResult {
  bool started = false;  // false: the program could not be started (error says why); nothing ran
  int exit_code = -1;    // its exit status; 128 + N when signal N ended it (as a shell reports it)
  std::string out;       // everything it wrote on stdout (and stderr with merge_stderr)
  std::string error;     // why it did not start, e.g. "cannot start 'python3': No such file or directory"
};

// Runs argv[0] (looked up on PATH when it has no '/') with argv, reads its output to the end and waits for it.
// The child inherits stdin and the working directory.
// The child leads a process group of its own (stop_children).
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Sends `signal` to the process group of every child run_process is waiting for now (each with whatever it
// started): how a run that gives up on a check (claimcheck run --timeout) or is interrupted ends its children.
// Returns how many groups it signalled. Safe to call from any thread, and from a signal handler.
int stop_children(int signal);

}  // namespace claimcheck
