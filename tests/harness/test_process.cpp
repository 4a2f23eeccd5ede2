// Programs start from an argument vector, never a shell string: what an argument holds reaches the program
// literally, failures to start are told apart from exit codes, and the harness's own callers (the python and
// numpy requirement probes, the environment record, git) cannot be made to run a command through a path.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "claimcheck/base/process.h"
#include "claimcheck/io.h"
#include "probe.h"
#include "records.h"
#include "runner.h"

using namespace claimcheck;
namespace fs = std::filesystem;

namespace {
// Sets an environment variable for one test and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};
}  // namespace

TEST(Process, ArgumentsReachTheProgramLiterally) {
  ScratchDir dir("process_args");
  const std::string mark = (dir.path() / "pwned").string();
  const std::string arg = "a b 'c' \"d\" $(touch " + mark + ") `touch " + mark + "` ; touch " + mark + " | & > <";
  // The one shell here is a deliberate argv: sh prints its $1, whatever that holds.
  const ProcessResult r = run_process({"/bin/sh", "-c", "printf %s \"$1\"", "x", arg});
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, arg);
  EXPECT_FALSE(fs::exists(mark));

  const ProcessResult e = run_process({"echo", "one two", "it's", "$HOME"});  // found on PATH
  ASSERT_TRUE(e.started) << e.error;
  EXPECT_EQ(e.out, "one two it's $HOME\n");
}

TEST(Process, ExitCodeAndSignal) {
  const ProcessResult r = run_process({"/bin/sh", "-c", "echo partial; exit 7"});
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "partial\n");
  const ProcessResult k = run_process({"/bin/sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(k.started);
  EXPECT_EQ(k.exit_code, 128 + 9);
}

TEST(Process, StderrMergedOrDiscarded) {
  const std::vector<std::string> argv{"/bin/sh", "-c", "echo out; echo err >&2; echo end"};
  const ProcessResult discarded = run_process(argv);
  EXPECT_EQ(discarded.out, "out\nend\n");
  ProcessOptions merge;
  merge.merge_stderr = true;
  const ProcessResult merged = run_process(argv, merge);
  EXPECT_EQ(merged.out, "out\nerr\nend\n");
}

TEST(Process, ProgramThatCannotStart) {
  // Under qemu-user the failed exec cannot be told from an exit: glibc's posix_spawn clones with CLONE_VM | CLONE_VFORK
  // and reads the child's exec errno from the memory they share, which qemu-user's emulated clone (a fork) does not
  // share; the spawn succeeds and the child exits 127.
  const std::string emulated = emulation_reason(ref::read_cpu_identity(), build_architecture());
  if (!emulated.empty()) GTEST_SKIP() << "posix_spawn cannot report a failed exec under emulation: " << emulated;
  for (const std::string prog : {"/nonexistent/claimcheck-no-such-program", "claimcheck-no-such-program"}) {
    const ProcessResult r = run_process({prog, "--version"});
    EXPECT_FALSE(r.started) << prog;
    EXPECT_NE(r.error.find(prog), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("No such file"), std::string::npos) << r.error;
    EXPECT_TRUE(r.out.empty());
  }
  EXPECT_FALSE(run_process({}).started);
  // A directory is found but cannot be executed.
  const ProcessResult d = run_process({"/tmp"});
  EXPECT_FALSE(d.started);
  EXPECT_FALSE(d.error.empty());
}

TEST(Process, LargeOutputWithoutDeadlock) {
  // 1 MiB on stdout and 1 MiB on stderr, far past the pipe's 64 KiB: read while the child writes.
  ProcessOptions merge;
  merge.merge_stderr = true;
  const ProcessResult r =
      run_process({"/bin/sh", "-c", "head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2"}, merge);
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), 2u << 20);
  const ProcessResult s = run_process({"head", "-c", "1048576", "/dev/urandom"});
  EXPECT_EQ(s.out.size(), 1u << 20);
}

TEST(Process, ExtraEnvironment) {
  ScopedEnv parent("CLAIMCHECK_TEST_PARENT", "from the parent");
  ScopedEnv replaced("CLAIMCHECK_TEST_REPLACED", "old");
  ProcessOptions o;
  o.env = {{"CLAIMCHECK_TEST_EXTRA", "it's $(x); y"}, {"CLAIMCHECK_TEST_REPLACED", "new"}};
  const ProcessResult r = run_process({"/bin/sh", "-c",
                                       "printf '%s|%s|%s' \"$CLAIMCHECK_TEST_EXTRA\" \"$CLAIMCHECK_TEST_REPLACED\" "
                                       "\"$CLAIMCHECK_TEST_PARENT\""},
                                      o);
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.out, "it's $(x); y|new|from the parent");
  // Without extra variables the child sees the parent's environment as it is.
  const ProcessResult plain = run_process({"/bin/sh", "-c", "printf %s \"$CLAIMCHECK_TEST_REPLACED\""});
  EXPECT_EQ(plain.out, "old");
  // Unset: gone from the child's environment, the rest kept (a name both set and unset is unset).
  ProcessOptions u;
  u.unset = {"CLAIMCHECK_TEST_REPLACED", "CLAIMCHECK_TEST_EXTRA"};
  u.env = {{"CLAIMCHECK_TEST_EXTRA", "x"}};
  const ProcessResult gone =
      run_process({"/bin/sh", "-c",
                   "printf '%s|%s|%s' \"${CLAIMCHECK_TEST_REPLACED-unset}\" \"${CLAIMCHECK_TEST_EXTRA-unset}\" "
                   "\"$CLAIMCHECK_TEST_PARENT\""},
                  u);
  EXPECT_EQ(gone.out, "unset|unset|from the parent");
}

TEST(Process, RunCommandTrimsAndFails) {
  EXPECT_EQ(run_command({"/bin/sh", "-c", "echo 'x y'; echo"}), std::optional<std::string>("x y"));
  EXPECT_EQ(run_command({"/bin/sh", "-c", "echo no; exit 1"}), std::nullopt);
  EXPECT_EQ(run_command({"claimcheck-no-such-program"}), std::nullopt);
}

TEST(Process, GitOnAPathWithAQuote) {
  if (!run_process({"git", "--version"}).started) GTEST_SKIP() << "git is not installed";
  ScratchDir dir("process_git");
  const fs::path repo = dir.path() / "it's a $(repo); x";
  fs::create_directories(repo);
  ASSERT_EQ(run_process({"git", "init", "-q", repo.string()}).exit_code, 0);
  const auto top = run_command({"git", "-C", repo.string(), "rev-parse", "--show-toplevel"});
  ASSERT_TRUE(top);
  EXPECT_EQ(fs::canonical(*top), fs::canonical(repo));
}

// $CLAIMCHECK_PYTHON is a path, never a command: one with a quote and a `; touch` runs nothing, and the
// requirement reports the interpreter as not found (the claims that need it are skipped).
TEST(Process, PythonPathCannotInjectACommand) {
  ScratchDir dir("process_python");
  const std::string mark = (dir.path() / "pwned").string();
  const std::string py = (dir.path() / "no'python; touch ").string() + mark + "; '";
  ScopedEnv env("CLAIMCHECK_PYTHON", py);
  ASSERT_EQ(python_interpreter(), py);
  Capabilities caps(nullptr);
  EXPECT_EQ(caps.missing(Requirement::python), std::optional<std::string>(py + " not found"));
  EXPECT_EQ(caps.missing(Requirement::numpy), std::optional<std::string>("numpy is not importable by " + py));
  const auto record = environment_record();
  EXPECT_EQ(record["python"]["interpreter"], py);
  EXPECT_TRUE(record["python"]["version"].is_null());
  EXPECT_FALSE(fs::exists(mark));
}
