"""A fast start (issue 12, point 4): `account`, `list` and `compare` (and `run` of checks without LibTorch) load no
LibTorch: the dynamic loader's own account of the files it maps (LD_DEBUG=files) names no libtorch / libc10. A run of
a LibTorch check does load it, from the module beside the executable (the method sees it); a missing or broken
module stops such a run with one line naming the file, while list and account still work. No timing is asserted:
the medians are printed for the record."""
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from clitest import Tally, args, load, run

a = args()
t = Tally()
MODULE = "claimcheck_torch_checks.so"
llama = os.path.join(a.root, "reference", "data", "configs", "llama-3-8b.json")


def loaded(binary, *argv):
    """(completed process, the shared objects the dynamic loader mapped, by file name)."""
    r = run(binary, *argv, env={"LD_DEBUG": "files"})
    files = set()
    for line in r.stderr.splitlines():
        if "file=" in line and ("needed by" in line or "dynamically loaded by" in line):
            files.add(os.path.basename(line.split("file=", 1)[1].split()[0]))
    return r, files


def torchy(files):
    return sorted(f for f in files if f.startswith(("libtorch", "libc10")) or f == MODULE)


with tempfile.TemporaryDirectory(prefix="cc_startup_") as tmp:
    rep = os.path.join(tmp, "report")
    cases = [("account", ["account", "--config", llama]),
             ("account --json", ["account", "--config", llama, "--json"]),
             ("list", ["list"]),
             ("list --json", ["list", "--json"]),
             ("run of a check without LibTorch", ["run", "--claim", "ch04.full_finetune_gb", "--report", rep]),
             # The analytic parts of every claim, those whose measured part is in the module among them.
             ("run --label analytic", ["run", "--label", "analytic", "--quiet", "--report", os.path.join(tmp, "an")]),
             ("compare", ["compare", os.path.join(rep, "report.json"), os.path.join(rep, "report.json")]),
             ("--version", ["--version"])]
    for what, argv in cases:
        r, files = loaded(a.claimcheck, *argv)
        t.check(r.returncode == 0, f"{what}: exit {r.returncode} {r.stderr[-300:]}")
        t.check(len(files) > 0, f"{what}: LD_DEBUG=files reported the loader's files")
        t.check(not torchy(files), f"{what} loads no LibTorch; it loaded {torchy(files)}")

    exe_dir = os.path.dirname(os.path.abspath(a.claimcheck))
    module = os.path.join(exe_dir, MODULE)
    entries = {c["id"]: c for c in __import__("json").loads(run(a.claimcheck, "list", "--json").stdout)}
    with_torch = os.path.exists(module)
    if not with_torch:
        print(f"built without LibTorch (no {module}): the module's part is skipped")
        t.check(entries["ch03.tiny_params"]["runnable"].startswith("partly"),
                "tiny_params' measured part skips without LibTorch")
    else:
        env = load(os.path.join(rep, "report.json"))["records"]["environment"]["libtorch"]
        t.check(isinstance(env, dict) and env.get("version") and "loaded" in env,
                f"a run without LibTorch checks records the build's LibTorch version, not loaded: {env}")
        # The method sees LibTorch when it is loaded: a LibTorch check's run maps the module and libtorch_cpu.
        rep2 = os.path.join(tmp, "report2")
        r, files = loaded(a.claimcheck, "run", "--claim", "ch03.tiny_params", "--report", rep2)
        t.check(r.returncode == 0, f"ch03.tiny_params: exit {r.returncode} {r.stdout} {r.stderr[-300:]}")
        t.check(MODULE in files and any(f.startswith("libtorch") for f in files),
                f"a LibTorch check's run loads the module and LibTorch: {torchy(files)}")
        env = load(os.path.join(rep2, "report.json"))["records"]["environment"]["libtorch"]
        t.check(env.get("version") and env.get("config") and "loaded" not in env,
                "a run of a LibTorch check records LibTorch's version and build settings")

        # The executable alone, without its module: list and account as before, a LibTorch check stops.
        lone = os.path.join(tmp, "lone")
        os.makedirs(lone)
        shutil.copy2(a.claimcheck, lone)
        bare = os.path.join(lone, os.path.basename(a.claimcheck))
        r = run(bare, "list")
        t.check(r.returncode == 0 and r.stdout == run(a.claimcheck, "list").stdout, "list without the module: the same")
        t.check(run(bare, "account", "--config", llama).returncode == 0, "account without the module")
        t.check(run(bare, "run", "--claim", "ch04.full_finetune_gb").returncode == 0,
                "a run of a check without LibTorch, without the module")
        for broken in (False, True):
            what = "a broken module" if broken else "no module"
            if broken:
                with open(os.path.join(lone, MODULE), "w") as f:
                    f.write("not a shared object\n")
            r = run(bare, "run", "--claim", "ch03.tiny_params")
            lines = r.stderr.strip().splitlines()
            t.check(r.returncode == 2 and len(lines) == 1 and os.path.join(lone, MODULE) in lines[0]
                    and r.stdout == "", f"{what}: exit {r.returncode}, stderr {r.stderr!r}, stdout {r.stdout!r}")
            print(f"{what}: {lines[0] if lines else ''}")

    # For the record (not a test): median wall time of 10 starts each.
    def median_ms(*argv):
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            subprocess.run([a.claimcheck, *argv], capture_output=True)
            times.append(time.perf_counter() - t0)
        return 1e3 * statistics.median(times)
    for what, argv in cases[:1] + cases[2:3] + cases[5:7]:
        print(f"{what}: median {median_ms(*argv):.0f} ms over 10 runs")

t.finish()
