"""The answer key's PyTorch side of chapter 5's SFT loop (kernels/train/sft.cpp: sft_train), written apart from the
code under test: the conversations it trained on rendered with Qwen2.5's own chat template (chat_template.py),
batched here as a causal-LM collator does, and the series' twenty lines run on the model chapter 3's reference builds
(char_reference.build) from the parameters the code under test exported before step 0.

  sft_reference.py --dir DIR --template tokenizer_config.json --conversations FILE.jsonl --batch B --lr LR
                   --weight-decay WD --clip C --vocab V --context T --d-model D --d-ff F --layers L --heads H

Batch s holds conversations s * B .. s * B + B - 1 of the file (wrapping around), in order; each row is its tokens
and targets (chat_template.py: the answers and their <|im_end|>, -100 elsewhere), padded to the batch's longest with
<|im_end|> (targets -100) and cut at T + 1 tokens; the inputs are tokens[:-1], the labels targets[1:] (the shift a
causal LM applies). The loop: cross-entropy in fp32 with ignore_index=-100, backward, clip_grad_norm_(C),
AdamW(LR, weight_decay WD), zero_grad(set_to_none=True).

Figures (the pydriver protocol, details under "pytorch"):
  sft_batches_mismatch  rows of the exported x.s / y.s that differ from this side's batch s, plus the parameters
                        whose names or shapes differ from this side's model (the sizes passed here)
  sft_loop_vs_pytorch   each exported step's loss and pre-clip gradient norm against this side's loop on its own
                        batches: the worst, in assert_close's fp32 units (<= 1 accepts)
  sft_weights_vs_pytorch_over_lr   the parameters after the last exported step: the largest difference over lr
A missing torch, safetensors or jinja2 is a "skip" with the reason."""
import argparse
import math
import sys

from hf_reference import adamw_mismatch, emit, figure_value as figure  # the pydriver protocol, shared

PROG = "sft_reference.py"
IM_END, IGNORE = 257, -100


def batch(encoded, s, n, context):
    """This side's batch s: (x, y) as lists of rows."""
    rows = [encoded[(s * n + i) % len(encoded)] for i in range(n)]
    length = min(max(len(r["tokens"]) for r in rows), context + 1)
    xs, ys = [], []
    for r in rows:
        toks, tgts = r["tokens"][:length], r["targets"][:length]
        x = toks[:-1] + [IM_END] * (length - len(toks))
        y = tgts[1:] + [IGNORE] * (length - len(tgts))
        xs.append(x)
        ys.append(y)
    return xs, ys


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--template", required=True)
    p.add_argument("--conversations", required=True)
    for name in ("batch", "vocab", "context", "d-model", "d-ff", "layers", "heads"):
        p.add_argument(f"--{name}", type=int, required=True)
    for name in ("lr", "weight-decay", "clip"):
        p.add_argument(f"--{name}", type=float, required=True)
    a = p.parse_args(argv)
    try:
        import torch
        from safetensors.torch import load_file
        import jinja2  # noqa: F401
    except ImportError as e:
        emit(skip=f"torch, safetensors and jinja2 are not importable by {sys.executable} ({type(e).__name__}: {e})")
        return
    import chat_template
    from char_reference import clipped_norm_units, load_export, units
    encoded, render = chat_template.encode(a)
    model, mismatch, run = load_export(torch, load_file, a)
    steps = run["loss"].numel()
    details = {"torch": torch.__version__, "steps": steps, "parameters_mismatch": mismatch[:8],
               "template": {k: v for k, v in render.items() if k != "template"}, "conversations": len(encoded)}

    bad_rows, first_bad = 0, None
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    per_step = {"loss": 0.0, "grad_norm": 0.0, "clipped_norm": 0.0}
    losses = []
    for s in range(steps):
        xs, ys = batch(encoded, s, a.batch, a.context)
        px, py = run[f"x.{s}"].tolist(), run[f"y.{s}"].tolist()
        for i, (x, y) in enumerate(zip(xs, ys)):
            ok = i < len(px) and px[i] == x and py[i] == y
            bad_rows += not ok
            if not ok and first_bad is None:
                first_bad = {"step": s, "row": i}
        bad_rows += max(0, len(px) - len(xs))
        x, y = torch.tensor(xs), torch.tensor(ys)
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(), y.reshape(-1),
                                                 ignore_index=IGNORE)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        per_step["clipped_norm"] = max(per_step["clipped_norm"], clipped_norm_units(torch, model, run, s))
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        per_step["loss"] = max(per_step["loss"], units(run["loss"][s:s + 1].float(), loss.detach().reshape(1)))
        per_step["grad_norm"] = max(per_step["grad_norm"],
                                    units(run["grad_norm"][s:s + 1].float(), norm.detach().float().reshape(1)))
    # The weights after the last step, in units of the rate: AdamW moves an element by up to about lr a step
    # whatever its gradient's size, so where a gradient is near zero its rounding moves the element by a share of lr;
    # a wrong rate, clipping or batch moves many by lr or more. The assert_close units are a detail.
    after_lr, after_units = 0.0, 0.0
    for n, q in model.named_parameters():
        key = f"after.{n}"
        if key not in run or tuple(run[key].shape) != tuple(q.shape):
            after_lr = after_units = math.inf
            continue
        after_lr = max(after_lr, (run[key].double() - q.detach().double()).abs().max().item() / a.lr)
        after_units = max(after_units, units(run[key], q.detach()))
    details["units"] = {k: (v if math.isfinite(v) else None) for k, v in {**per_step, "after": after_units}.items()}
    details["after_over_lr"] = after_lr if math.isfinite(after_lr) else None
    details["batches"] = {"rows": steps * a.batch, "differ": bad_rows, "first_differing": first_bad}
    details["losses"] = {"project": run["loss"].tolist(), "pytorch": losses}
    details["optimizer"] = run["adamw"].tolist() if "adamw" in run else None
    emit([{"name": "sft_batches_mismatch", "value": bad_rows + len(mismatch) + 0.0, "unit": "count"},
          {"name": "sft_optimizer_mismatch", "value": adamw_mismatch(run, opt.param_groups), "unit": "count"},
          {"name": "sft_loop_vs_pytorch", "value": figure(max(per_step.values())), "unit": "ratio"},
          {"name": "sft_weights_vs_pytorch_over_lr", "value": figure(after_lr), "unit": "ratio"}],
         {"pytorch": details})


if __name__ == "__main__":
    main(sys.argv[1:])
