"""harness/python/zygote.py: a driver forked from the warm interpreter sees what a fresh interpreter would (its
arguments, environment, working directory, streams, exit status, thread count, its own sys.path[0]) and leaves
nothing behind; a killed client takes its run with it; a stale socket falls back to a fresh interpreter."""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument("--root", required=True)
p.add_argument("--python", required=True)
a = p.parse_args()
ZYGOTE = os.path.join(a.root, "harness", "python", "zygote.py")
failed = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failed.append(what)


PROBE = r"""
import json, os, sys
out = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": os.environ.get("CC_PROBE"), "path0": sys.path[0],
       "fault": os.environ.get("CLAIMCHECK_FAULT"), "stdin": sys.stdin.read()}
try:
    import torch
    out["threads"] = torch.get_num_threads()
except ImportError:
    out["threads"] = None
print(json.dumps(out, sort_keys=True))
print("to stderr", "pid", os.getpid(), file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""

with tempfile.TemporaryDirectory(prefix="cc_zygote_") as d:
    sock = os.path.join(d, "z.sock")
    script = os.path.join(d, "sub", "probe.py")
    os.makedirs(os.path.dirname(script))
    with open(script, "w") as f:
        f.write(PROBE)
    r = subprocess.run([a.python, ZYGOTE, "start", sock], capture_output=True, text=True, timeout=200)
    check(r.returncode == 0 and os.path.exists(sock), f"start: {r.stdout.strip()} {r.stderr.strip()[-300:]}")
    env = dict(os.environ, CC_PROBE="x y", CLAIMCHECK_FAULT="some_fault", OMP_NUM_THREADS="1")
    runs = {}
    for mode, argv in (("fresh", [a.python, script]), ("forked", [a.python, "-S", ZYGOTE, "run", sock, script])):
        runs[mode] = subprocess.run(argv + ["3", "a b"], input="from stdin", capture_output=True, text=True,
                                    env=env, cwd=d, timeout=120)
    f, z = runs["fresh"], runs["forked"]
    check(f.returncode == z.returncode == 3, f"exit status: fresh {f.returncode}, forked {z.returncode}")
    check(f.stdout == z.stdout, f"what the script sees: fresh {f.stdout.strip()}, forked {z.stdout.strip()}")
    check("to stderr" in z.stderr, f"its standard error: {z.stderr.strip()[-200:]}")

    def ran_fresh(argv, env):
        """Whether the client exec'd the script itself (the script's pid is the client's) rather than forking it."""
        c = subprocess.Popen(argv + ["0"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, cwd=d)
        out, err = c.communicate(timeout=120)
        return c.returncode == 0 and f"pid {c.pid}" in err, err.strip()[-200:]
    forked = [a.python, "-S", ZYGOTE, "run", sock, script]
    check(not ran_fresh(forked, env)[0], "OMP_NUM_THREADS named: forked")
    no_omp = {k: v for k, v in env.items() if k != "OMP_NUM_THREADS"}
    check(ran_fresh(forked, no_omp)[0], "no OMP_NUM_THREADS: fresh (a fork cannot take torch's own default count)")
    other = "/usr/bin/python3"
    if os.path.exists(other) and os.path.dirname(os.path.abspath(other)) != os.path.dirname(os.path.abspath(a.python)):
        check(ran_fresh([other, "-S", ZYGOTE, "run", sock, script], env)[0],
              "another interpreter than the server's: fresh")

    # A client killed mid-run takes its run (and the run's children) with it.
    sleeper = os.path.join(d, "sleeper.py")
    with open(sleeper, "w") as f:
        f.write("import os, subprocess, sys, time\n"
                "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                "print(os.getpid(), child.pid, flush=True)\ntime.sleep(60)\n")
    c = subprocess.Popen([a.python, "-S", ZYGOTE, "run", sock, sleeper], stdout=subprocess.PIPE, text=True, env=env)
    pids = [int(x) for x in c.stdout.readline().split()]
    c.send_signal(signal.SIGKILL)
    c.wait()
    deadline = time.monotonic() + 5
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as st:
                    if st.read().split(")")[-1].split()[0] != "Z":
                        alive.append(pid)
            except FileNotFoundError:
                pass
    check(len(pids) == 2 and not alive, f"a killed client's run and its child are gone: {pids}, left {alive}")

    subprocess.run([a.python, ZYGOTE, "stop", sock], timeout=30)
    time.sleep(2)  # the server notices within a second
    # A socket with no server behind it: the script runs as a fresh interpreter.
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sock)
    s.close()
    r = subprocess.run([a.python, "-S", ZYGOTE, "run", sock, script, "0"], input="", capture_output=True, text=True,
                       env=env, cwd=d, timeout=120)
    check(r.returncode == 0 and '"argv": ["0"]' in r.stdout, f"a stale socket: exit {r.returncode}, {r.stdout.strip()}")

print(f"{len(failed)} failed")
sys.exit(1 if failed else 0)
