"""A warm interpreter for the answer key's Python references in a test suite: torch, transformers and peft imported
once, each reference run in a fork of it. The suite runs some 200, each a fresh interpreter that spends 2-5 s
importing those libraries before its first line; forked from one that has, it starts at once.

    zygote.py serve SOCKET      imports the libraries, listens on the UNIX socket SOCKET, forks a run per request;
                                exits when SOCKET is removed (zygote.py stop) or on SIGTERM
    zygote.py start SOCKET      `serve` detached, returning once it listens (a ctest fixture's set-up)
    zygote.py stop SOCKET       removes SOCKET and stops the server
    zygote.py run SOCKET SCRIPT [ARGS...]
                                runs SCRIPT ARGS in a fork of the server, with this process's standard streams,
                                working directory and environment; exits with the script's status (128 + N where a
                                signal N ended it). Killed or interrupted, it takes the run with it. Run with `-S`:
                                it imports nothing but the standard library. Without OMP_NUM_THREADS, with another
                                interpreter than the server's, or with no server there, SCRIPT runs fresh.

claimcheck's harness runs reference/python/ this way, in a run that judges no time, where $CLAIMCHECK_PY_ZYGOTE names
a live socket (the ctest fixture py_zygote starts one for the suite); elsewhere, as users run claims, and for the
checks' own drivers (which measure processes' memory and time: a child of a large process reports the large one's
peak), each is a fresh interpreter. A run in a fork differs from a fresh one only in what was imported before its
first line: its environment, arguments, working directory, streams and thread count are its own, its libraries read
no state it did not set (every reference seeds its generators), and nothing it does reaches the server or another
run. (It ends by os._exit: atexit handlers and non-daemon threads, which no reference uses, do not run.)"""
import json
import os
import signal
import socket
import struct
import sys
import time

PRELOAD = ("numpy", "torch", "safetensors.torch", "transformers", "peft")
IDLE_S = 1800  # a server with no request for this long removes its socket and exits


def interpreter():
    """The binary and the folder it was started from (a venv's bin/: its packages), as `-S` leaves them (it leaves
    sys.prefix at the base installation's)."""
    return [os.path.realpath(sys.executable), os.path.dirname(os.path.abspath(sys.executable))]


def send_msg(conn, obj, fds=()):
    data = json.dumps(obj).encode()
    header = struct.pack("!I", len(data))
    if fds:
        socket.send_fds(conn, [header + data], list(fds))
    else:
        conn.sendall(header + data)


def recv_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def recv_msg(conn, with_fds=0):
    fds = []
    if with_fds:
        msg, fds, _, _ = socket.recv_fds(conn, 4, with_fds)
        if len(msg) < 4:
            msg += recv_exact(conn, 4 - len(msg))
        (n,) = struct.unpack("!I", msg[:4])
        body = msg[4:]
    else:
        (n,) = struct.unpack("!I", recv_exact(conn, 4))
        body = b""
    body += recv_exact(conn, n - len(body))
    return json.loads(body), fds


def worker(req, fds):
    """In the run's process: become the script's interpreter, then run it."""
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    sys.stdin = os.fdopen(0, "r", closefd=False)
    sys.stdout = os.fdopen(1, "w", closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, errors="backslashreplace", closefd=False)  # as a fresh one's
    script = req["argv"][0]
    sys.argv = list(req["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    if "torch" in sys.modules:  # the thread count a fresh interpreter takes from OMP_NUM_THREADS (`run` asks it)
        import torch
        torch.set_num_threads(max(1, int(os.environ["OMP_NUM_THREADS"])))
    import runpy
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, (int, type(None))):
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 (a traceback, as a fresh interpreter prints it)
        import traceback
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def handle(conn):
    """In a fork of the server, one per request: fork the run, report its pid and status, and kill it (its whole
    process group) if the client goes away first."""
    req, fds = recv_msg(conn, with_fds=3)
    if req.get("python") != interpreter():  # another interpreter or environment asked for: it runs fresh
        send_msg(conn, {"fresh": True})
        os._exit(0)
    pid = os.fork()
    if pid == 0:
        conn.close()
        worker(req, fds)
    for fd in fds:
        os.close(fd)
    try:
        send_msg(conn, {"pid": pid})
    except OSError:  # the client went away before it learnt the run's pid: the run goes too
        os.kill(pid, signal.SIGKILL)
        os._exit(0)
    conn.setblocking(False)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        try:
            if conn.recv(1) == b"":
                raise ConnectionError
        except BlockingIOError:
            pass
        except OSError:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            os._exit(0)
        time.sleep(0.02)
    code = os.waitstatus_to_exitcode(status)
    conn.setblocking(True)
    try:
        send_msg(conn, {"exit": 128 - code if code < 0 else code})
    except OSError:
        pass
    os._exit(0)


def serve(path):
    for name in PRELOAD:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 (a library not installed: its drivers skip, as they do when fresh)
            pass
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if os.path.exists(path):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path + ".part")
    srv.listen(64)
    os.replace(path + ".part", path)
    srv.settimeout(1.0)
    last = time.monotonic()
    while os.path.exists(path):
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            if time.monotonic() - last > IDLE_S:  # a suite that ended without its clean-up
                os.unlink(path)
            continue
        last = time.monotonic()
        if os.fork() == 0:
            srv.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            handle(conn)
        conn.close()


def start(path, timeout=120):
    """Starts `serve` detached (its own session, its log beside the socket) and returns once it listens. Where it
    cannot start, says so and returns: the drivers then run as fresh interpreters."""
    import subprocess
    if os.path.exists(path):
        os.unlink(path)
    with open(path + ".log", "w") as log:
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", path], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True)
    t0 = time.monotonic()
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() - t0 > timeout:
            print(f"zygote.py: no warm interpreter (see {path}.log): each driver runs as a fresh one")
            return
        time.sleep(0.1)
    print(f"zygote.py: a warm interpreter listens on {path} (pid {proc.pid}, {time.monotonic() - t0:.1f} s to start)")


def fresh(argv):
    """The script as a fresh interpreter of this binary (without `-S`), in this process."""
    os.execv(sys.executable, [sys.executable, *argv])


def run(path, argv):
    if not os.environ.get("OMP_NUM_THREADS", "").isdigit():
        # A fresh torch takes its thread count from MKL_NUM_THREADS or the physical cores: only a count the
        # environment names is one a fork can set the same.
        fresh(argv)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:  # no server there (a stale socket)
        fresh(argv)
    env = dict(os.environ)
    env.pop("CLAIMCHECK_PY_ZYGOTE", None)
    send_msg(conn, {"argv": argv, "env": env, "cwd": os.getcwd(), "python": interpreter()},
             fds=(0, 1, 2))
    reply = recv_msg(conn)[0]
    if reply.get("fresh"):
        fresh(argv)
    pid = reply["pid"]

    def stop(signum, frame):  # the run goes with its client
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        os._exit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        code = recv_msg(conn)[0]["exit"]
    except (EOFError, OSError):
        code = 1
    sys.exit(code)


def main(argv):
    if len(argv) == 2 and argv[0] == "serve":
        serve(argv[1])
    elif len(argv) == 2 and argv[0] == "start":
        start(argv[1])
    elif len(argv) == 2 and argv[0] == "stop":
        if os.path.exists(argv[1]):
            os.unlink(argv[1])
    elif len(argv) >= 3 and argv[0] == "run":
        run(argv[1], argv[2:])
    else:
        print("usage: zygote.py serve SOCKET | start SOCKET | stop SOCKET | run SOCKET SCRIPT [ARGS...]",
              file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
