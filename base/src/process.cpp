#include "claimcheck/base/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

extern char** environ;

namespace claimcheck {

namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The parent's environment with the extra variables added or replaced, and the unset ones removed.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra,
                                           const std::vector<std::string>& unset) {
  auto named = [](const std::string& entry, const std::string& name) {
    return entry.compare(0, name.size() + 1, name + "=") == 0;
  };
  auto removed = [&](const std::string& entry) {
    for (const auto& name : unset)
      if (named(entry, name)) return true;
    return false;
  };
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    bool replaced = removed(entry);
    for (const auto& [name, value] : extra) replaced |= named(entry, name);
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [name, value] : extra)
    if (!removed(name + "=")) env.push_back(name + "=" + value);
  return env;
}

// The process groups of the children running now (each child leads its own): what stop_children() ends. Lock-free
// slots, so that a signal handler may read them (kill is async-signal-safe; a mutex is not).
constexpr int kSlots = 256;
std::atomic<pid_t> g_groups[kSlots];
void remember(pid_t pid) {
  for (auto& slot : g_groups) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}
void forget(pid_t pid) {
  for (auto& slot : g_groups) {
    pid_t p = pid;
    if (slot.compare_exchange_strong(p, 0)) return;
  }
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv_in, const ProcessOptions& options) {
  ProcessResult r;
  if (argv_in.empty() || argv_in[0].empty()) {
    r.error = "cannot start a program: empty argument vector";
    return r;
  }
  std::vector<std::string> argv = argv_in;
  std::vector<char*> argv_c = c_strings(argv);
  std::vector<std::string> env;
  std::vector<char*> env_c;
  if (!options.env.empty() || !options.unset.empty()) {
    env = child_environment(options.env, options.unset);
    env_c = c_strings(env);
  }

  // Close-on-exec, so that a child started at the same time from another thread does not inherit the write
  // end and keep this pipe open (we would then wait for an EOF that never comes).
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.error = "cannot start '" + argv[0] + "': pipe: " + std::strerror(errno);
    return r;
  }
  int read_end = fds[0], write_end = fds[1];

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto 1 (and 2) clears close-on-exec on the copy; the original write end closes at exec.
  posix_spawn_file_actions_adddup2(&actions, write_end, STDOUT_FILENO);
  if (options.merge_stderr)
    posix_spawn_file_actions_adddup2(&actions, write_end, STDERR_FILENO);
  else
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);

  // Each child leads a process group of its own, so that stop_children() ends it with everything it started
  // (torch.distributed's workers, a driver's own subprocesses) and nothing of the caller's.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  // glibc (>= 2.24) reports a failed exec (ENOENT, EACCES) here rather than as a child exiting 127.
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, argv_c.data(),
                              options.env.empty() && options.unset.empty() ? environ : env_c.data());
  if (rc == 0) remember(pid);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close_fd(write_end);  // the child holds its own copy: EOF comes when it (and its children) close theirs
  if (rc != 0) {
    close_fd(read_end);
    r.error = "cannot start '" + argv[0] + "': " + std::strerror(rc);
    return r;
  }
  r.started = true;

  // Read to the end before waiting: a child that fills the pipe (64 KiB) would otherwise block for ever.
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(read_end, buf, sizeof buf);
    if (n > 0) {
      r.out.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      r.error = std::string("reading its output: ") + std::strerror(errno);
      break;
    }
  }
  close_fd(read_end);

  int status = 0;
  pid_t w;
  do {
    w = ::waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  forget(pid);
  if (w < 0) {
    r.error = std::string("waitpid: ") + std::strerror(errno);
    r.exit_code = -1;
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.exit_code = 128 + WTERMSIG(status);
  }
  return r;
}

int stop_children(int signal) {
  int n = 0;
  for (auto& slot : g_groups) {
    const pid_t g = slot.load();
    if (g > 0 && ::kill(-g, signal) == 0) ++n;
  }
  return n;
}

}  // namespace claimcheck
