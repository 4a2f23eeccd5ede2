"""The answer key's PyTorch side of chapter 3's character model: the model, its data windows, its loss and the
twenty-line loop written here as the series writes them (nn.Module, torch.optim.AdamW, clip_grad_norm_,
zero_grad(set_to_none=True)), apart from the code under test, and run on what the code under test exported
(kernels/train/tiny.cpp, TrainOptions::export_dir).

  char_reference.py --dir DIR --corpus FORTUNES --vocab V --context T --d-model D --d-ff F --layers L --heads H
                    --weight-decay WD --clip C --lr BASE:MIN:WARMUP:TOTAL [--eval-batch B]

The model is built here from those sizes (the series' model), and the exported parameters must match it name for
name and shape for shape.

DIR/model.safetensors holds the parameters before step 0; DIR/run.safetensors the first steps' batches (x.s, y.s),
the logits and gradients at step 0, the per-step loss, gradient norm and learning rate, and the parameters after the
last exported step (after.<name>). Here:
  windows      this side's own corpus from FORTUNES (every file without an extension, sorted, concatenated, bytes past
               127 folded to '?', the first 95 %) cut into windows of context + 1 characters at multiples of context:
               each exported row of x must be one of them and its y the next characters (count of rows that are not);
               and the rows whose window is next to the previous row's in the corpus (a loader that shuffles: chance's)
  logits, loss, grads   the model here on the same parameters and x.0: assert_close units (<= 1 is what
               torch.testing.assert_close accepts, with its fp32 defaults)
  steps        the exported steps re-run here (same batches): each step's learning rate (this side's warmup + cosine),
               loss and pre-clip gradient norm, then the parameters after the last: the worst in assert_close units
  eval         DIR/eval.safetensors, the run's last evaluation (its windows eval.x / eval.y, its perplexity eval.ppl,
               the parameters it ran on, final.<name>): each row must be a window of this side's held-out text (the
               last 5 %), and the model here on those parameters must give that perplexity (assert_close units of
               its log: the mean of the batches' mean losses, --eval-batch rows each)
Prints one JSON object (the pydriver protocol); a missing torch or safetensors is a "skip" with the reason."""
import argparse
import hashlib
import math
import os
import sys

from hf_reference import TOLERANCES, adamw_mismatch, emit, figure_value as figure  # the pydriver protocol, shared

PROG = "char_reference.py"
RTOL, ATOL = TOLERANCES["float32"]  # torch.testing.assert_close's float32 defaults


def die(msg):
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.exit(2)


def units(project, reference):
    """The worst element of |project - reference| in units of assert_close's fp32 tolerance (inf where the shapes
    differ or the project's values are not finite)."""
    import torch
    if tuple(project.shape) != tuple(reference.shape):
        return math.inf
    a, b = project.double(), reference.double()
    if not torch.isfinite(a).all():
        return math.inf
    return ((a - b).abs() / (ATOL + RTOL * b.abs())).max().item() if a.numel() else 0.0


def clipped_norm_units(torch, model, run, s):
    """Step s's norm after clipping (what the step applies) against the run's "grad_norm_clipped", in assert_close
    units: a pre-clip norm alone cannot show the bound. A run without it misses by infinity."""
    applied = torch.sqrt(sum(q.grad.double().pow(2).sum() for q in model.parameters() if q.grad is not None))
    if "grad_norm_clipped" not in run or run["grad_norm_clipped"].numel() <= s:
        return math.inf
    return units(run["grad_norm_clipped"][s:s + 1].float(), applied.float().reshape(1))


def corpus(folder):
    names = sorted(n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n)) and "." not in n)
    if not names:
        die(f"{folder}: no fortune text files")
    text = b"".join(open(os.path.join(folder, n), "rb").read() for n in names)
    text = bytes(c if c < 128 else ord("?") for c in text)
    cut = len(text) * 95 // 100
    return text[:cut], text[cut:]  # the training text, the held-out text


def window_index(text, T):
    """{window of T characters at a multiple of T: [its starts]} over `text` (the windows a loader may hand over)."""
    windows = {}
    for i in range((len(text) - 1) // T - 1):
        windows.setdefault(text[i * T: i * T + T], []).append(i)
    return windows


def not_windows(text, windows, T, xs, ys):
    """How many rows (x, y) are not a window of `text` at a multiple of T with y its next characters."""
    bad = 0
    for x, y in zip(xs, ys):
        xb = bytes(x) if all(0 <= c < 256 for c in x) else None
        bad += not (xb is not None and any(list(text[i * T + 1: i * T + T + 1]) == y for i in windows.get(xb, [])))
    return bad


def lr_at(step, base, low, warmup, total):
    """Linear warmup to base over `warmup` steps (step s uses (s + 1) / warmup), then cosine from base to low."""
    if step < warmup:
        return base * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return low + (base - low) * 0.5 * (1 + math.cos(math.pi * progress))


def build(torch, weights, a):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d, ff):
            super().__init__()
            self.ln1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln2, self.fc1, self.fc2 = nn.LayerNorm(d), nn.Linear(d, ff), nn.Linear(ff, d)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=-1)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
            x = x + self.proj(a)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class CharModel(nn.Module):
        def __init__(self, vocab, context, d, ff, layers):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(context, d)
            for i in range(layers):
                self.add_module(f"block{i}", Block(d, ff))
            self.layers = layers
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for i in range(self.layers):
                x = getattr(self, f"block{i}")(x)
            return self.head(self.ln_f(x))

    heads = a.heads
    m = CharModel(a.vocab, a.context, a.d_model, a.d_ff, a.layers)  # the series' sizes, not the export's
    context = a.context
    own = dict(m.named_parameters())
    mismatch = sorted(set(own) ^ set(weights)) + sorted(k for k in own if k in weights and own[k].shape != weights[k].shape)
    m.load_state_dict({k: v for k, v in weights.items() if k in own and own[k].shape == v.shape}, strict=False)
    return m, mismatch, context


def load_export(torch, load_file, a):
    """The export in a.dir (model.safetensors before step 0, run.safetensors what the steps saw and did) and the model
    build() makes from a's sizes on those parameters, seeded and deterministic: (model, mismatched names, run)."""
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    weights = load_file(os.path.join(a.dir, "model.safetensors"))
    run = load_file(os.path.join(a.dir, "run.safetensors"))
    model, mismatch, _ = build(torch, weights, a)
    return model, mismatch, run


def checkpoint_mismatch(torch, path, final):
    """The parameters of the run's checkpoint (LibTorch's torch::save of the module, a TorchScript archive) that are
    not, bit for bit, the final parameters the run's last evaluation exported (and validated against this side's
    model): a file written before training, or of another model, differs in every one."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch.jit.load's deprecation notice)
            saved = dict(torch.jit.load(path, map_location="cpu").named_parameters())
    except Exception as e:  # noqa: BLE001 (an unreadable file is a mismatch in every parameter, said so)
        return [f"{path}: {type(e).__name__}: {e}"] + sorted(final)
    names = sorted(set(saved) | set(final))
    return [n for n in names
            if n not in saved or n not in final or saved[n].shape != final[n].shape or not torch.equal(saved[n], final[n])]


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--heads", type=int, required=True)
    for name in ("vocab", "context", "d-model", "d-ff", "layers"):
        p.add_argument(f"--{name}", type=int, required=True)
    p.add_argument("--weight-decay", type=float, required=True)
    p.add_argument("--clip", type=float, required=True)
    p.add_argument("--eval-batch", type=int, default=16, help="the rows per evaluated batch (the loss is their mean)")
    p.add_argument("--batch", type=int, required=True, help="the rows per training step the series' loop draws")
    p.add_argument("--checkpoint", help="the run's checkpoint (LibTorch's torch::save of the module): held to the "
                                        "final parameters the evaluation exported")
    p.add_argument("--train-chars", type=int, required=True,
                   help="the characters the run's side trained on (its split of the corpus), held to this side's")
    p.add_argument("--train-sha256", required=True, help="the SHA-256 of the characters the run's side trained on")
    p.add_argument("--eval-rows", type=int, required=True,
                   help="the windows the run's last evaluation reads (its batches x rows, as the series sets them)")
    p.add_argument("--lr", required=True, help="BASE:MIN:WARMUP:TOTAL")
    a = p.parse_args(argv)
    try:
        base, low, warmup, total = (float(x) for x in a.lr.split(":"))
    except ValueError:
        die(f"--lr {a.lr}: expected BASE:MIN:WARMUP:TOTAL")
    try:
        import torch
        from safetensors.torch import load_file
    except ImportError as e:
        emit(skip=f"torch and safetensors are not importable by {sys.executable} ({type(e).__name__}: {e})")
        return
    model, mismatch, run = load_export(torch, load_file, a)
    T = a.context
    steps = run["loss"].numel()
    details = {"torch": torch.__version__, "steps": steps, "parameters_mismatch": mismatch[:8]}

    # The windows: every exported row against this side's own windows of the corpus.
    text, held_out = corpus(a.corpus)
    windows = window_index(text, T)
    bad_rows = rows = in_order = 0
    reach = -1  # the latest window of the corpus a row comes from (each row at its earliest start)
    before = set()  # where the previous row's window may start
    for s in range(steps):
        rows += run[f"x.{s}"].shape[0]
        bad_rows += not_windows(text, windows, T, run[f"x.{s}"].tolist(), run[f"y.{s}"].tolist())
        # A loader that shuffles hands over the window next to the previous one (after it or before it) about twice in
        # as many rows as the corpus has windows; one that goes through them in order, every time.
        for x in run[f"x.{s}"].tolist():
            starts = set(windows.get(bytes(x), [])) if all(0 <= c < 256 for c in x) else set()
            in_order += any(i - 1 in before or i + 1 in before for i in starts)
            reach = max(reach, min(starts, default=-1))
            before = starts
    # The rows drawn from the whole training text: the latest window any row comes from, over the windows there are
    # (about 1 - 1 / (rows + 1) for rows drawn from all of them; below a half, with all 48 from the first half, at
    # odds of 2^-48 for a loader that draws from all).
    n_windows = max(1, (len(text) - 1) // T - 1)
    span = max(reach, 0) / n_windows
    details["windows"] = {"rows": rows, "not_windows": bad_rows, "corpus_bytes": len(text), "in_corpus_order": in_order,
                          "windows": n_windows, "latest_window": reach}

    # Step 0: logits, loss, every gradient.
    model.train()
    x0, y0 = run["x.0"], run["y.0"]
    logits = model(x0)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y0.reshape(-1),
                                             ignore_index=-100)
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    grad_units = max((units(run[f"grad.{n}"], g) if f"grad.{n}" in run else math.inf for n, g in grads.items()),
                     default=math.inf)
    first = {"logits": units(run["logits.0"], logits.detach()),
             "loss": units(run["loss"][0:1].float(), loss.detach().reshape(1)), "grads": grad_units}

    # The loop, on the same batches.
    model.zero_grad(set_to_none=True)
    opt = torch.optim.AdamW(model.parameters(), lr=base, weight_decay=a.weight_decay)
    per_step = {"lr": 0.0, "loss": 0.0, "grad_norm": 0.0, "clipped_norm": 0.0}
    for s in range(steps):
        lr = lr_at(s, base, low, warmup, total)
        for g in opt.param_groups:
            g["lr"] = lr
        out = model(run[f"x.{s}"])
        step_loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(), run[f"y.{s}"].reshape(-1),
                                                      ignore_index=-100)
        step_loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        per_step["clipped_norm"] = max(per_step["clipped_norm"], clipped_norm_units(torch, model, run, s))
        opt.step()
        opt.zero_grad(set_to_none=True)
        per_step["lr"] = max(per_step["lr"], units(run["lr"][s:s + 1], torch.tensor([lr], dtype=torch.float64)))
        per_step["loss"] = max(per_step["loss"], units(run["loss"][s:s + 1].float(), step_loss.detach().reshape(1)))
        per_step["grad_norm"] = max(per_step["grad_norm"],
                                    units(run["grad_norm"][s:s + 1].float(), norm.detach().float().reshape(1)))
    after = max((units(run[f"after.{n}"], p.detach()) if f"after.{n}" in run else math.inf
                 for n, p in model.named_parameters()), default=math.inf)
    details["units"] = {k: (v if math.isfinite(v) else None) for k, v in {**first, **per_step, "after": after}.items()}
    details["grad_norms"] = run["grad_norm"].tolist()
    # AdamW's settings (a step's size hides the betas) and the rows of every step: the loader's batch as the series'.
    optimizer = adamw_mismatch(run, opt.param_groups)
    batch_off = sum(tuple(run[f"x.{s}"].shape) != (a.batch, T) for s in range(steps))
    details["optimizer"] = run["adamw"].tolist() if "adamw" in run else None
    details["batch_shapes"] = [list(run[f"x.{s}"].shape) for s in range(steps)]
    loop = max(*per_step.values(), after)
    # The run's perplexity: its last evaluation's windows against this side's held-out text (the last 5 %), and the
    # model here on the final parameters over those windows: exp of the mean of the batches' mean losses.
    held_bad = eval_units = rows_off = math.inf  # no export of the evaluation: nothing to hold it to
    eval_file = os.path.join(a.dir, "eval.safetensors")
    if os.path.exists(eval_file):
        ev = load_file(eval_file)
        final = {k[len("final."):]: v for k, v in ev.items() if k.startswith("final.")}
        model_f, mismatch_f, _ = build(torch, final, a)
        model_f.eval()
        ex, ey, B = ev["eval.x"], ev["eval.y"], a.eval_batch
        held_bad = not_windows(held_out, window_index(held_out, T), T, ex.tolist(), ey.tolist())
        # as many windows as the evaluation was set to read, each once (a perplexity over one batch read again is
        # still a held-out perplexity)
        rows_off = abs(ex.shape[0] - a.eval_rows) + (ex.shape[0] - len({bytes(r) for r in ex.tolist()}))
        with torch.no_grad():
            losses = [torch.nn.functional.cross_entropy(model_f(ex[i:i + B]).reshape(-1, a.vocab).float(),
                                                        ey[i:i + B].reshape(-1), ignore_index=-100).item()
                      for i in range(0, ex.shape[0], B)]
        ref_log_ppl = sum(losses) / len(losses)
        if not mismatch_f:
            eval_units = units(torch.log(ev["eval.ppl"]), torch.tensor([ref_log_ppl], dtype=torch.float64))
        details["eval"] = {"rows": ex.shape[0], "not_held_out_windows": held_bad, "ppl": ev["eval.ppl"].item(),
                           "reference_ppl": math.exp(ref_log_ppl), "units": figure(eval_units)}
    details["train_chars"] = {"run": a.train_chars, "reference": len(text)}
    # the characters themselves: as many, and the same (a folding of the non-ASCII bytes apart moves none of the count)
    split_off = a.train_chars - len(text) + 0.0
    if split_off == 0 and hashlib.sha256(text).hexdigest() != a.train_sha256:
        split_off = 1.0
    checkpoint = []
    if a.checkpoint:
        checkpoint = checkpoint_mismatch(torch, a.checkpoint, final if os.path.exists(eval_file) else {})
        details["checkpoint_differs"] = checkpoint[:8]
    emit([{"name": "windows_not_from_corpus", "value": bad_rows + 0.0, "unit": "count"},
          {"name": "optimizer_mismatch", "value": optimizer, "unit": "count"},
          {"name": "batch_shape_mismatch", "value": batch_off + 0.0, "unit": "count"},
          {"name": "train_split_vs_reference", "value": split_off, "unit": "count"},
          {"name": "windows_in_corpus_order", "value": in_order + 0.0, "unit": "count"},
          {"name": "windows_span_corpus", "value": span, "unit": "ratio"},
          {"name": "eval_windows_not_held_out", "value": held_bad + 0.0, "unit": "count"},
          {"name": "eval_vs_pytorch", "value": figure(eval_units), "unit": "ratio"},
          {"name": "eval_rows_mismatch", "value": figure(rows_off), "unit": "count"},
          *([{"name": "checkpoint_mismatch", "value": len(checkpoint) + 0.0, "unit": "count"}] if a.checkpoint else []),
          {"name": "parameters_mismatch", "value": len(mismatch) + 0.0, "unit": "count"},
          {"name": "step0_vs_pytorch", "value": figure(max(first.values())), "unit": "ratio"},
          {"name": "loop_vs_pytorch", "value": figure(loop), "unit": "ratio"}],
         {"pytorch": details})


if __name__ == "__main__":
    main(sys.argv[1:])
