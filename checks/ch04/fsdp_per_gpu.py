"""ch04.fsdp_per_gpu, measured: PyTorch FSDP2 (fully_shard) on a real distributed engine shards parameters,
gradients and AdamW state evenly, so each rank holds about 1/N of the full fine-tune state.

Launcher mode (the default) validates the arguments and the config, then starts N worker processes: on CPU processes
(gloo, the default) it imports torch once and forks them, each joining the group through a FileStore (torchrun would
start N interpreters, each importing torch and FSDP: about 2 s of CPU apiece); on GPUs (`--backend nccl --device cuda
--world <GPUs>`), or where $CLAIMCHECK_TORCHRUN names a torchrun, torchrun starts them. Each worker builds a
Llama-shaped decoder from a Hugging Face config.json on the meta device, applies fully_shard to every decoder
layer and then to the root, materialises and initialises its local shards (fp32), runs one forward + backward
(cross-entropy on random tokens, B=1) and one AdamW step, and then counts its LOCAL bytes:
- params: the DTensor local shards of the parameters;
- grads: the local shards of the gradients;
- optimizer state: every tensor in optimizer.state[p] (local shards), AdamW's `step` counters reported apart;
- total: the unsharded bytes of params + grads + state, from the full (global) shapes;
- gathered layer: a forward pre-hook registered on each decoder layer after fully_shard (so it runs after FSDP's
  own pre-forward hook, which all-gathers the layer) sums the bytes of the layer's parameters as the module sees
  them then, i.e. unsharded; the largest over layers is the transient peak of one gathered layer.
Each worker writes its counts to a JSON file in a temporary directory given on its command line; the launcher
aggregates them and emits one JSON object (pydriver protocol). Worker output is captured, never on our stdout.

- layers gathered at once: in the same hook, the number of decoder layers whose parameters are unsharded then (the
  largest over the forward): one per wrapped layer, with the next one where FSDP prefetches it.
Planted fault ($CLAIMCHECK_FAULT=fsdp_root_only): fully_shard on the root alone; every layer is in the root's one
group, all gathered for the whole forward (the shards are still 1/N: only this count sees it).
Planted fault ($CLAIMCHECK_FAULT=fsdp_state_unsharded): a DDP-era "fp32 master weights" recipe ported as-is:
the optimizer runs over full-size copies of the parameters (p.full_tensor()), gradients are gathered into
them, and the updated masters are copied back into the shards. It trains, but AdamW's m and v are full-size on
every rank, so shard_fraction moves from 1/N to 1/2 + 1/(2N).

One file past 500 lines: torchrun starts this very file as each worker, so the launcher, the worker and the
fault it plants stay in one script that the check runs by path."""
import argparse
import importlib.metadata
import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pydriver import emit, fault, measurement  # noqa: E402

PROG = "fsdp_per_gpu.py"
FAULT = "fsdp_state_unsharded"
RUN_TIMEOUT_S = 900


def die(msg, rc=2):
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.stderr.flush()
    sys.exit(rc)


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage + error otherwise)
        die(message)


def parse_args(argv):
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--config", default=None, help="a Hugging Face Llama config.json")
    p.add_argument("--world", type=int, default=8, help="number of ranks (processes / GPUs)")
    p.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--tokens", type=int, default=32, help="sequence length T of the one training step (B=1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--outdir", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.config is None:
        die("argument --config: required (a Hugging Face Llama config.json)")
    if a.world < 1:
        die(f"argument --world: must be >= 1, got {a.world}")
    if a.tokens < 1:
        die(f"argument --tokens: must be >= 1, got {a.tokens}")
    if a.backend == "nccl" and a.device != "cuda":
        die("argument --backend: nccl needs --device cuda")
    return a


def load_config(path):
    """The fields this driver needs, validated; a bad file ends the run with one line naming file and field."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        die(f"{path}: cannot read: {e.strerror or e}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        die(f"{path}: not JSON: {e}")
    if not isinstance(raw, dict):
        die(f"{path}: not a JSON object")

    def field(name, default=None, kind=int, positive=True):
        if name not in raw:
            if default is None:
                die(f"{path}: field '{name}': missing")
            return default
        v = raw[name]
        if kind is bool:
            ok = isinstance(v, bool)
        else:  # JSON true/false are not numbers here
            ok = not isinstance(v, bool) and isinstance(v, int if kind is int else (int, float))
        if not ok:
            die(f"{path}: field '{name}': expected {kind.__name__}, got {json.dumps(v)}")
        if positive and kind is not bool and not v > 0:
            die(f"{path}: field '{name}': must be > 0, got {v}")
        return v

    c = {
        "hidden_size": field("hidden_size"),
        "num_hidden_layers": field("num_hidden_layers"),
        "num_attention_heads": field("num_attention_heads"),
        "intermediate_size": field("intermediate_size"),
        "vocab_size": field("vocab_size"),
        "rms_norm_eps": float(field("rms_norm_eps", 1e-6, kind=float)),
        "rope_theta": float(field("rope_theta", 10000.0, kind=float)),
        "tie_word_embeddings": field("tie_word_embeddings", False, kind=bool),
    }
    c["num_key_value_heads"] = field("num_key_value_heads", c["num_attention_heads"])
    if c["hidden_size"] % c["num_attention_heads"]:
        die(f"{path}: field 'num_attention_heads': {c['num_attention_heads']} does not divide "
            f"hidden_size {c['hidden_size']}")
    if (c["hidden_size"] // c["num_attention_heads"]) % 2:
        die(f"{path}: field 'num_attention_heads': head_dim {c['hidden_size'] // c['num_attention_heads']} "
            "is odd (RoPE needs an even head_dim)")
    if c["num_attention_heads"] % c["num_key_value_heads"]:
        die(f"{path}: field 'num_key_value_heads': {c['num_key_value_heads']} does not divide "
            f"num_attention_heads {c['num_attention_heads']}")
    act = raw.get("hidden_act", "silu")
    if act != "silu":
        die(f"{path}: field 'hidden_act': only silu (SwiGLU) is built here, got {json.dumps(act)}")
    return c


# ----------------------------------------------------------------------------------------------- launcher
def torchrun_command():
    env = os.environ.get("CLAIMCHECK_TORCHRUN")
    if env is None or not env.strip():
        return [sys.executable, "-m", "torch.distributed.run"], False
    try:
        parts = shlex.split(env)
    except ValueError as e:
        die(f"$CLAIMCHECK_TORCHRUN={env}: {e}")
    prog = parts[0]
    found = (os.path.isfile(prog) and os.access(prog, os.X_OK)) if os.sep in prog else shutil.which(prog)
    if not found:
        die(f"$CLAIMCHECK_TORCHRUN={env}: no such program")
    return parts, True


# FSDP2 on CPU processes (gloo) first runs in torch 2.7. Before it, fully_shard's communication state is CUDA's
# alone: 2.4 makes torch.cuda.Stream()s at the first forward (FSDPCommContext.init; "CUDA driver version is
# insufficient" on a host without a GPU), 2.5 raises "FSDP requires CUDA for streams", and 2.6 takes a
# torch.cpu.Stream that has no record_event (foreach_all_gather).
CPU_FSDP2_TORCH = (2, 7)


def cpu_fsdp2_missing(a, version):
    """The reason to skip when `version` (torch's) cannot run FSDP2 on CPU processes as asked, else None."""
    if a.device != "cpu":
        return None
    try:
        have = tuple(int(x) for x in version.split("+")[0].split(".")[:2])
    except ValueError:
        return None  # an unusual version string: let the run say what it can do
    if have >= CPU_FSDP2_TORCH:
        return None
    need = ".".join(map(str, CPU_FSDP2_TORCH))
    return (f"FSDP2 (fully_shard) on CPU processes needs torch >= {need}; torch {version} runs it on CUDA "
            f"streams only (on GPUs: --backend nccl --device cuda)")


def torch_available(a):
    """None when this interpreter can run the workers, else the reason to skip (imports torch: ~4 s of CPU)."""
    try:
        import torch
        import torch.distributed as dist
    except Exception as e:  # noqa: BLE001 - any import failure means: no usable torch here
        return f"torch not importable by {sys.executable}: {type(e).__name__}: {e}"
    if not dist.is_available():
        return f"torch {torch.__version__} was built without torch.distributed"
    if a.backend == "gloo" and not dist.is_gloo_available():
        return f"torch {torch.__version__} has no gloo backend"
    if a.backend == "nccl" and not dist.is_nccl_available():
        return f"torch {torch.__version__} has no nccl backend"
    try:
        fully_shard_fn()
    except ImportError:
        return f"torch {torch.__version__} has no FSDP2 fully_shard (needs torch >= 2.4)"
    why = cpu_fsdp2_missing(a, torch.__version__)
    if why:
        return why
    if a.device == "cuda" and torch.cuda.device_count() < a.world:
        return f"--device cuda --world {a.world} needs {a.world} GPUs, found {torch.cuda.device_count()}"
    return None


def exited(proc, timeout):
    """Wait up to timeout s for proc to exit WITHOUT reaping it: while it is an unreaped zombie its pid, which is
    also its process group's id, cannot be reused, so signalling the group stays safe."""
    deadline = time.monotonic() + timeout
    while True:
        if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def die_with_parent(sig=signal.SIGTERM):
    """In the child: `sig` to it if the launcher dies (even by SIGKILL); Linux only. torchrun gets SIGTERM (it stops
    its workers); a forked rank SIGKILL (blocked in C++, in the rendezvous or a gloo receive, it would run no Python
    handler)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, sig)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def on_sigterm(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through run_torchrun's cleanup and the temp dir's removal


def run_torchrun(cmd, env, log):
    """torchrun in a session (and process group) of its own; returns its exit status. On a timeout or ^C the
    whole group gets SIGTERM, then SIGKILL; in every case the group is swept before torchrun is reaped, so no
    worker outlives the run."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, preexec_fn=die_with_parent)
    try:
        if not exited(proc, RUN_TIMEOUT_S):
            raise subprocess.TimeoutExpired(cmd, RUN_TIMEOUT_S)
    except BaseException:
        signal_group(proc, signal.SIGTERM)
        exited(proc, 15)
        raise
    finally:
        signal_group(proc, signal.SIGKILL)
        proc.wait()
    return proc.returncode


def run_forked(a, cfg, tmp, log):
    """The ranks forked from this process, which has imported torch and FSDP (torch_available): each joins the group
    through a FileStore in tmp and writes its rank file as a torchrun worker does. Returns 0 when every rank exited 0,
    else the first non-zero status, the other ranks killed then (as torchrun stops a failed group: the survivors would
    wait in the rendezvous or a collective). On a timeout, ^C or SIGTERM every rank is killed, then reaped, with those
    signals held meanwhile, so none outlives the run."""
    import torch
    init = "file://" + os.path.join(tmp, "store")
    w = argparse.Namespace(**dict(vars(a), worker=True, outdir=tmp))  # the arguments torchrun's workers get
    launcher = os.getpid()
    held = {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}
    sys.stdout.flush()
    sys.stderr.flush()
    pids = []
    try:
        with open(log, "ab") as out:
            signal.pthread_sigmask(signal.SIG_BLOCK, held)  # a signal between a fork and its pid's record loses none
            try:
                for rank in range(a.world):
                    pid = os.fork()
                    if pid == 0:  # the rank: its output to the log, never on the launcher's stdout
                        code = 1
                        try:
                            for sig in (signal.SIGTERM, signal.SIGHUP):  # not the launcher's handler: the default
                                signal.signal(sig, signal.SIG_DFL)
                            signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C reaches the launcher, which kills
                            die_with_parent(signal.SIGKILL)
                            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
                            if os.getppid() != launcher:  # the launcher died before the death signal was set
                                os._exit(1)
                            os.dup2(out.fileno(), 1)
                            os.dup2(out.fileno(), 2)
                            os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(a.world))
                            torch.set_num_threads(1)  # 8 ranks share the cores, as OMP_NUM_THREADS=1 under torchrun
                            worker(w, cfg, init_method=init)
                            code = 0
                        except BaseException:  # noqa: BLE001 - the rank's file says what; the traceback to the log
                            import traceback
                            traceback.print_exc()
                        finally:
                            sys.stdout.flush()
                            sys.stderr.flush()
                            os._exit(code)
                    pids.append(pid)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
        deadline, status = time.monotonic() + RUN_TIMEOUT_S, {}
        while len(status) < len(pids):
            for pid in pids:
                if pid not in status:
                    done, st = os.waitpid(pid, os.WNOHANG)
                    if done:
                        status[pid] = os.waitstatus_to_exitcode(st)
                        if status[pid] != 0:  # one rank failed: the others are stopped below
                            return status[pid] if status[pid] > 0 else 1
            if len(status) < len(pids):
                if time.monotonic() >= deadline:
                    raise subprocess.TimeoutExpired("the forked ranks", RUN_TIMEOUT_S)
                time.sleep(0.05)
        return 0
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, held)  # a second ^C must not cut the sweep short
        try:
            running = []
            for pid in pids:
                try:
                    if os.waitpid(pid, os.WNOHANG) == (0, 0):
                        os.kill(pid, signal.SIGKILL)
                        running.append(pid)
                except ChildProcessError:
                    pass  # reaped above
            for pid in running:
                os.waitpid(pid, 0)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def tail(path, n=30):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [line for line in f.read().splitlines() if line.strip()][-n:]
    except OSError:
        return []


def show_tail(log):
    for line in tail(log):
        sys.stderr.write(f"  | {line}\n")


def launch(a, cfg):
    runner, custom = torchrun_command()
    forked = not custom and a.device == "cpu"
    if not custom:  # cheap (no import of torch); the full check runs in the workers, or below where they are forked
        if importlib.util.find_spec("torch") is None:
            emit(skip=f"torch is not installed for {sys.executable}")
            return 0
        try:
            why = cpu_fsdp2_missing(a, importlib.metadata.version("torch"))
        except importlib.metadata.PackageNotFoundError:  # a torch without its metadata: the workers will say
            why = None
        if why:
            emit(skip=why)
            return 0
    if forked:  # the ranks inherit what this process imports here
        why = torch_available(a)
        if why:
            emit(skip=why)
            return 0

    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGHUP, on_sigterm)
    tmp = tempfile.mkdtemp(prefix="claimcheck_fsdp_")
    log = os.path.join(tmp, "ranks.log")
    # OMP_NUM_THREADS=1: 8 ranks share 2 cores; TMPDIR: torchelastic's log dirs land in tmp, removed below.
    env = dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=tmp)
    cmd = runner + ["--standalone", "--nnodes=1", f"--nproc_per_node={a.world}", os.path.abspath(__file__),
                    "--worker", "--outdir", tmp, "--config", os.path.abspath(a.config), "--world", str(a.world),
                    "--backend", a.backend, "--device", a.device, "--tokens", str(a.tokens), "--seed", str(a.seed)]
    launcher = "the forked ranks" if forked else "torchrun"
    t0 = time.perf_counter()
    try:
        try:
            rc = run_forked(a, cfg, tmp, log) if forked else run_torchrun(cmd, env, log)
        except subprocess.TimeoutExpired:
            show_tail(log)
            die(f"{launcher} did not finish in {RUN_TIMEOUT_S} s (killed)", rc=1)
        seconds = time.perf_counter() - t0
        results, errors, skips = [], [], []
        for r in range(a.world):
            f = os.path.join(tmp, f"rank{r}.json")
            if os.path.exists(f):
                with open(f, encoding="utf-8") as fh:
                    d = json.load(fh)
                (errors if "error" in d else skips if "skip" in d else results).append(d)
        if skips:
            emit(skip=skips[0]["skip"])
            return 0
        if rc != 0 or errors or len(results) != a.world:
            why = None if errors or custom or forked else torch_available(a)  # did torchrun fail for want of torch?
            if why:
                emit(skip=why)
                return 0
            show_tail(log)
            reason = errors[0]["error"] if errors else f"{len(results)} of {a.world} ranks reported"
            die(f"{launcher} exited with {rc}: {reason}", rc=rc if rc > 0 else 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    results.sort(key=lambda d: d["rank"])
    total = results[0]["total_state_bytes"]
    if any(d["total_state_bytes"] != total for d in results):
        die("ranks disagree on the total (unsharded) state bytes: "
            + ", ".join(str(d["total_state_bytes"]) for d in results), rc=1)
    per_rank = [d["params"] + d["grads"] + d["optimizer_state"] for d in results]
    top = max(range(a.world), key=lambda r: per_rank[r])
    keys = ("rank", "params", "grads", "optimizer_state", "step_counters", "loss", "setup_s", "step_s", "cpu_s")
    emit(measurements=[measurement("shard_fraction", per_rank[top] / total, "ratio"),
                       measurement("per_rank_state", per_rank[top] / 1e6, "MB"),
                       measurement("total_state", total / 1e6, "MB"),
                       measurement("gathered_layer_peak", max(d["gathered_layer_bytes"] for d in results) / 1e6,
                                   "MB"),
                       # The most decoder layers unsharded at one moment of the forward: FSDP2 wrapped per layer
                       # gathers the one it runs (and may prefetch the next); wrapped at the root only, all of them.
                       measurement("layers_gathered_at_once", max(d["layers_gathered_at_once"] for d in results),
                                   "count"),
                       # Gathered beside the one that runs and the next: a layer left in the root's group (never
                       # resharded during the forward) is one.
                       measurement("layers_gathered_apart", max(d["layers_gathered_apart"] for d in results),
                                   "count"),
                       # The unsharded state per parameter, counted on the ranks' tensors after the step: fp32
                       # weights, gradients and AdamW's two moments, 4 + 4 + 8 bytes.
                       measurement("state_bytes_per_param", total / results[0]["n_params"], "B"),
                       measurement("world", a.world, "count")],
         derived=[{"name": "ideal_shard_fraction", "value": 1.0 / a.world, "unit": "ratio"}],
         details={"per_rank": [{k: d[k] for k in keys} for d in results],
                  "total_bytes": {k: results[0][k] for k in ("total_params", "total_grads", "total_optimizer_state",
                                                             "total_step_counters")},
                  "n_params": results[0]["n_params"],
                  "gathered_per_layer_bytes": results[0]["gathered_per_layer_bytes"],
                  "root_group_gathered_bytes": results[0]["root_gathered_bytes"],
                  "layers_unsharded_in_hook": all(d["layers_unsharded_in_hook"] for d in results),
                  "backend": a.backend, "device": a.device, "world": a.world, "tokens": a.tokens,
                  "config": a.config, "torch": results[0]["torch"], "fully_shard": results[0]["fully_shard"],
                  "launcher": "fork" if forked else "torchrun",
                  "rank_cpu_s_from": ("its fork (torch and FSDP imported once, by the launcher)" if forked
                                      else "its interpreter's start (its own import of torch and FSDP included)"),
                  "seconds": round(seconds, 2), "planted_fault": fault() or None},
         assumptions=["parameters, gradients and AdamW state are fp32 (4 bytes per element), no mixed precision",
                      "AdamW keeps two moments m and v per parameter, each the parameter's size; its per-parameter "
                      "`step` counters (scalars) are reported apart and left out of shard_fraction",
                      f"the {a.world} ranks are "
                      + ("CPU processes on the gloo backend" if a.device == "cpu" else f"GPUs on {a.backend}")
                      + (", forked from one launcher on one node (a FileStore rendezvous)" if forked
                         else ", launched by torchrun on one node")
                      + "; FSDP2 fully_shard on each decoder layer, then the root",
                      "gathered layer = one decoder layer's parameters unsharded (all-gathered) for its forward, "
                      "read in a forward pre-hook that runs after FSDP's; the root group (embeddings, final norm, "
                      "lm_head), a second layer prefetched in backward, and activations come on top"])
    return 0


# ----------------------------------------------------------------------------------------------- worker
def fully_shard_fn():
    try:
        from torch.distributed.fsdp import fully_shard  # torch >= 2.6
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard  # torch 2.4 / 2.5
    return fully_shard


def build_model(cfg):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    hidden, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = hidden // heads

    def weight(*shape):  # uninitialised (the model is built on the meta device); initialised after sharding
        return nn.Parameter(torch.empty(*shape))

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = weight(hidden)

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg["rms_norm_eps"]) * self.weight

    class Linear(nn.Module):  # nn.Linear without bias and without its init (meta-device init would run it)
        def __init__(self, n_in, n_out):
            super().__init__()
            self.weight = weight(n_out, n_in)

        def forward(self, x):
            return F.linear(x, self.weight)

    class Embedding(nn.Module):
        def __init__(self, n, d):
            super().__init__()
            self.weight = weight(n, d)

        def forward(self, ids):
            return F.embedding(ids, self.weight)

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    def rope(t, device):
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
        f = torch.outer(torch.arange(t, device=device, dtype=torch.float32), inv)
        e = torch.cat((f, f), dim=-1)
        return e.cos(), e.sin()

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = RMSNorm()
            self.q_proj = Linear(hidden, heads * hd)
            self.k_proj = Linear(hidden, kv * hd)
            self.v_proj = Linear(hidden, kv * hd)
            self.o_proj = Linear(heads * hd, hidden)
            self.post_attention_layernorm = RMSNorm()
            self.gate_proj = Linear(hidden, cfg["intermediate_size"])
            self.up_proj = Linear(hidden, cfg["intermediate_size"])
            self.down_proj = Linear(cfg["intermediate_size"], hidden)

        def forward(self, x):
            b, t, _ = x.shape
            h = self.input_layernorm(x)
            q = self.q_proj(h).view(b, t, heads, hd).transpose(1, 2)
            k = self.k_proj(h).view(b, t, kv, hd).transpose(1, 2)
            v = self.v_proj(h).view(b, t, kv, hd).transpose(1, 2)
            cos, sin = rope(t, x.device)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k, v = k.repeat_interleave(heads // kv, dim=1), v.repeat_interleave(heads // kv, dim=1)  # GQA
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o_proj(a.transpose(1, 2).reshape(b, t, heads * hd))
            h = self.post_attention_layernorm(x)
            return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = Embedding(cfg["vocab_size"], hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(cfg["num_hidden_layers"]))
            self.norm = RMSNorm()
            self.lm_head = Linear(hidden, cfg["vocab_size"])
            # (a planted fault reads the flag the other way round)
            if cfg["tie_word_embeddings"] != (fault() == "fsdp_head_tie_inverted"):
                self.lm_head.weight = self.embed_tokens.weight

        def forward(self, ids):
            x = self.embed_tokens(ids)
            for layer in self.layers:
                x = layer(x)
            return self.lm_head(self.norm(x))

    return Decoder()


def local(t):
    """The rank-local part of a tensor: a DTensor's local shard, a plain tensor itself."""
    if hasattr(t, "to_local"):
        return t.to_local()
    return getattr(t, "_local_tensor", t)


def nbytes(t):
    return t.numel() * t.element_size()  # DTensor.numel() is the global (full) numel


def worker(a, cfg, init_method=None):
    """One rank: torchrun's worker (the group from torchrun's environment), or a forked one (init_method: its
    FileStore)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    out = os.path.join(a.outdir, f"rank{rank}.json")

    def write(d):
        with open(out + ".part", "w", encoding="utf-8") as f:
            json.dump(d, f)
        os.replace(out + ".part", out)

    try:
        why = torch_available(a)
        if why:
            write({"rank": rank, "skip": why})
            return
        import torch
        import torch.distributed as dist
        if world != a.world:
            raise RuntimeError(f"WORLD_SIZE={world} but --world {a.world}")
        if a.device == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
            device = torch.device("cuda", torch.cuda.current_device())
        else:
            device = torch.device("cpu")
        if init_method:
            dist.init_process_group(backend=a.backend, init_method=init_method, rank=rank, world_size=world)
        else:
            dist.init_process_group(backend=a.backend)
        try:
            res = step_and_count(a, cfg, rank, world, device)
        finally:
            dist.destroy_process_group()
        write(res)
    except BaseException as e:
        write({"rank": rank, "error": f"rank {rank}: {type(e).__name__}: {e}".splitlines()[0]})
        raise


def step_and_count(a, cfg, rank, world, device):
    import torch
    import torch.nn.functional as F
    try:
        from torch.distributed.device_mesh import init_device_mesh
    except ImportError:
        from torch.distributed._tensor import init_device_mesh
    fully_shard = fully_shard_fn()

    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    mesh = init_device_mesh(device.type, (world,))
    with torch.device("meta"):
        model = build_model(cfg)
    if fault() != "fsdp_root_only":  # a planted fault: only the root wrapped, every layer in its one group
        # (Another leaves the last layer to the root's group, which stays gathered through the forward.)
        for layer in model.layers[:-1] if fault() == "fsdp_last_layer_unwrapped" else model.layers:
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    # Materialise only the local shards, then initialise them (HF-style: normal(0, 0.02), norms at 1).
    model.to_empty(device=device)
    gen = torch.Generator(device=device).manual_seed(a.seed * 1000 + rank)
    with torch.no_grad():
        for name, p in model.named_parameters():
            lp = local(p)
            if name.endswith("layernorm.weight") or name == "norm.weight":
                lp.fill_(1.0)
            else:
                lp.normal_(0.0, 0.02, generator=gen)

    gathered = {}
    unsharded_ok = []
    at_once = []  # at each layer's pre-forward: how many decoder layers hold their parameters unsharded
    apart = []  # ... and how many of them are neither that layer nor the next (which FSDP2 may prefetch)

    def pre_hook(i):
        def hook(module, args):
            ps = list(module.parameters())
            unsharded_ok.append(all(not hasattr(p, "to_local") for p in ps))
            gathered[i] = max(gathered.get(i, 0), sum(local(p).numel() * p.element_size() for p in ps))
            whole = [all(not hasattr(p, "to_local") for p in layer.parameters()) for layer in model.layers]
            at_once.append(sum(whole))
            apart.append(sum(w for j, w in enumerate(whole) if j not in (i, i + 1)))
        return hook

    root_gathered = []

    def root_hook(module, args):  # after FSDP's root pre-forward: the root's own group is gathered
        ps = [p for n, p in module.named_parameters() if not n.startswith("layers.")]
        root_gathered.append(sum(local(p).numel() * p.element_size() for p in {id(p): p for p in ps}.values()))

    handles = [layer.register_forward_pre_hook(pre_hook(i)) for i, layer in enumerate(model.layers)]
    handles.append(model.register_forward_pre_hook(root_hook))

    params = list(model.parameters())
    planted = fault() == FAULT
    if planted:
        # The bug: fp32 "master weights" made from the gathered full tensors, as in a DDP recipe; AdamW's state
        # follows its parameters, so m and v are full-size on every rank.
        masters = [p.full_tensor().detach().clone().requires_grad_(True) for p in params]
        opt = torch.optim.AdamW(masters, lr=1e-3)
    else:
        opt = torch.optim.AdamW(params, lr=1e-3)

    g = torch.Generator(device="cpu").manual_seed(a.seed * 1000 + 500 + rank)
    ids = torch.randint(0, cfg["vocab_size"], (1, a.tokens + 1), generator=g).to(device)
    t1 = time.perf_counter()
    logits = model(ids[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), ids[:, 1:].reshape(-1))
    loss.backward()
    if planted:
        for p, m in zip(params, masters):
            m.grad = p.grad.full_tensor()
        opt.step()
        with torch.no_grad():
            for p, m in zip(params, masters):
                lp = local(p)
                chunks = torch.chunk(m.detach(), world, dim=0)
                if rank < len(chunks) and lp.numel():
                    lp.copy_(chunks[rank][: lp.shape[0]])
                m.grad = None
    else:
        opt.step()
    if fault() == "fsdp_grads_dropped":  # a planted fault: the loop's zero_grad(set_to_none) before the count
        opt.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    step_s = time.perf_counter() - t1
    for h in handles:
        h.remove()

    counts = {"params": 0, "grads": 0, "optimizer_state": 0, "step_counters": 0,
              "total_params": 0, "total_grads": 0, "total_optimizer_state": 0, "total_step_counters": 0}
    seen = set()
    for p in params:
        if id(p) in seen:
            continue
        seen.add(id(p))
        counts["params"] += nbytes(local(p))
        counts["total_params"] += nbytes(p)
        if p.grad is not None:
            counts["grads"] += nbytes(local(p.grad))
            counts["total_grads"] += nbytes(p.grad)
    for st in opt.state.values():
        for k, v in st.items():
            if not torch.is_tensor(v):
                continue
            if k == "step":
                counts["step_counters"] += nbytes(local(v))
                counts["total_step_counters"] += nbytes(v)
            else:
                counts["optimizer_state"] += nbytes(local(v))
                counts["total_optimizer_state"] += nbytes(v)
    return dict(counts, rank=rank, loss=float(loss.item()), setup_s=round(t1 - t0, 3), step_s=round(step_s, 3),
                cpu_s=round(time.process_time(), 2), torch=torch.__version__, fully_shard=fully_shard.__module__,
                n_params=sum(p.numel() for p in params),
                total_state_bytes=counts["total_params"] + counts["total_grads"] + counts["total_optimizer_state"],
                gathered_layer_bytes=max(gathered.values()) if gathered else 0,
                gathered_per_layer_bytes=[gathered[i] for i in sorted(gathered)],
                root_gathered_bytes=max(root_gathered) if root_gathered else 0,
                layers_gathered_at_once=max(at_once) if at_once else 0,
                layers_gathered_apart=max(apart) if apart else 0,
                layers_unsharded_in_hook=bool(unsharded_ok) and all(unsharded_ok))


def main(argv):
    a = parse_args(argv)
    cfg = load_config(a.config)
    if a.worker:
        if not a.outdir:
            die("argument --outdir: required with --worker")
        worker(a, cfg)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # the result is written; skip tearing down torch + dynamo (~2 s of CPU per rank)
    return launch(a, cfg)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
