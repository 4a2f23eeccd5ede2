"""The answer key's Hugging Face side: the project's decoder and LoRA, exported by the code under test as safetensors
(kernels/train/hf_export.cpp), against the implementations the field trusts, on the same weights and inputs.

  decoder --config C --run fp32:DIR [--run bf16:DIR ...] [--run fp32_padded:DIR]
      transformers' model for C's model_type (LlamaForCausalLM, Qwen2ForCausalLM), built from C with eager attention,
      loads DIR/model.safetensors (strict: every key and shape), runs DIR/run.safetensors' input_ids with labels =
      input_ids (transformers shifts them itself), backpropagates its loss, and compares the logits, the loss and
      every parameter's gradient with the project's: the figure transformers_LABEL. A DIR with a config.json of its
      own is built from that config instead of C. A run that holds attention_mask
      and position_ids (a left-padded batch) passes them to the model, labels padding -100 and compares the logits
      of the tokens only.
  generate --config C --dir DIR
      the same model on DIR/model.safetensors decoding with transformers' own cache (past_key_values): the prompt
      DIR/run.safetensors' input_ids, then each token the project fed, one at a time; the logits after each against
      the project's cached decode (kernels/train/hf_export.cpp: export_decoder_generation), the project's prompt's
      second chunk (every position's logits: it prefilled the prompt in two calls) against the prompt's, and the
      bytes per token the two caches hold (fp32 here).
  peft_model --config C --dir DIR --r R --alpha A --targets T1,T2 --lr LR --weight-decay WD
      get_peft_model on transformers' model for C (the project's base weights), LoraConfig(r, alpha, targets): the
      adapted modules and the trainable count against the project's (kernels/train/hf_export.cpp:
      export_lora_model_run), then with the project's A and B loaded: merge_adapter and unmerge_adapter's logits
      against the project's merge and unmerge; the adapter the project saved (DIR/adapter) loaded by
      PeftModel.from_pretrained, its logits; logits, loss, every adapter's gradient, and A and B after one
      torch.optim.AdamW step.
  lora_sft --config C --dir DIR --template T --conversations F --r R --alpha A --targets T1,T2 --batch B --lr LR
           --weight-decay WD --clip CLIP
      chapter 5's six lines: F rendered with Qwen2.5's own template T (chat_template.py), row i conversation i mod
      n, right-padded to the longest (<|im_end|>, label -100), against the rows the project trained on; then
      get_peft_model(transformers' model for C on the project's base weights, LoraConfig(r, alpha, targets)) given
      the project's starting A and B, and Trainer(model, train_dataset=this side's rows in order, TrainingArguments:
      the linear schedule without warmup, AdamW, WD, max_grad_norm CLIP).train(): each step's loss and the adapters
      after the last step against the project's SFT loop (kernels/train/hf_export.cpp: export_lora_sft_run); the
      adapter the project saved after training, loaded by PeftModel.from_pretrained, its logits against the
      project's. (fp32 on both sides: the series loads the model in bf16.)
  param_counts --config C [--config C2 ...] --r R --targets T1,T2
      transformers' model for each config built on the meta device: its parameters, those a token meets (in each
      sparse layer the experts it is not routed to left out, each expert's share measured on the modules), and peft's
      trainable count of LoraConfig(r, target_modules) on it.
  lora --case NAME:r:alpha:rslora:lr:weight_decay:FILE ... [--seed S]
      peft's LoRA (get_peft_model on one nn.Linear, LoraConfig(r, lora_alpha, use_rslora)) given the project's base
      weight, A and B: the outputs at init and trained, the merged weight (base + get_delta_weight), and A, B and the
      output after one torch.optim.AdamW step on sum(y * g). Then a fresh peft adapter, initialised by peft, takes the
      same step: the project's fresh delta weight against peft's, as a norm ratio (an adapter that cannot learn: 0).

A comparison's figure is the worst |project - reference| / (atol + rtol |reference|) over the elements, with
torch.testing.assert_close's default atol and rtol for the dtype: at most 1 is what assert_close accepts.
Prints one JSON object (the pydriver protocol: measurements, details under "transformers", "peft", "peft_model" or
"lora_sft", skip): a missing transformers, peft or safetensors (or, for lora_sft, a Trainer that cannot run) is a
"skip" with the reason, which the checks list as pending."""
import argparse
import json
import math
import os
import sys

PROG = "hf_reference.py"
# torch.testing.assert_close's defaults (its documentation's table): dtype -> (rtol, atol).
TOLERANCES = {"float32": (1.3e-6, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float64": (1e-7, 1e-7)}


def emit(measurements=(), details=None, skip=None):
    out = {"measurements": list(measurements), "details": details or {}}
    if skip:
        out["skip"] = skip
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def die(msg):
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.exit(2)


def imports():
    try:
        import torch  # noqa: F401
        import safetensors.torch  # noqa: F401
        import transformers  # noqa: F401
        import peft  # noqa: F401
    except ImportError as e:
        emit(skip=f"transformers, peft and safetensors are not importable by {sys.executable} "
                  f"({type(e).__name__}: {e}); `make configure` (ci/setup-python.sh) installs them")
        sys.exit(0)


def tolerance_units(project, reference):
    """The worst element of |project - reference| in units of assert_close's tolerance for reference's dtype."""
    import torch
    if project.shape != reference.shape:
        return math.inf
    rtol, atol = TOLERANCES[str(reference.dtype).replace("torch.", "")]
    a, b = project.double(), reference.double()
    if not torch.isfinite(a).all():
        return math.inf
    return ((a - b).abs() / (atol + rtol * b.abs())).max().item() if a.numel() else 0.0


def relative(project, reference):
    """max |project - reference| / max |reference| (a detail: the size of the difference beside its scale)."""
    a, b = project.double(), reference.double()
    scale = b.abs().max().item()
    return (a - b).abs().max().item() / scale if scale > 0 else (a - b).abs().max().item()


def rms(a, b):
    return (a.double() - b.double()).pow(2).mean().sqrt().item()


def forward_backward(model, weights, ids, mask=None, positions=None):
    """transformers' model on these weights (a parameter they do not name is zero): its logits, its loss (labels =
    ids, shifted by transformers; -100 on padding and on the token after it) and every parameter's gradient of that loss, by the names in
    weights. mask and positions (a padded batch) go to the model as attention_mask and position_ids; the logits of
    padding positions, which nothing reads, are zeroed."""
    import torch
    model.load_state_dict(weights, strict=False)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name not in weights:
                p.zero_()
    model.train()  # dropout is 0 in these configs; train() as the project's step runs
    labels = ids
    if mask is not None:  # no loss on padding, nor on the first token after it (its prediction is read at padding)
        labels = ids.masked_fill(mask == 0, -100)
        labels[:, 1:].masked_fill_(mask[:, :-1] == 0, -100)
    out = model(input_ids=ids, labels=labels, attention_mask=mask, position_ids=positions)
    out.loss.backward()
    params = dict(model.named_parameters())
    logits = out.logits.detach()
    if mask is not None:
        logits = logits.masked_fill(mask.unsqueeze(-1) == 0, 0)
    res = {"logits": logits, "loss": out.loss.detach().float().reshape(())}
    res.update({f"grad.{name}": params[name].grad for name in weights})
    return res


def finite(x):
    return x if math.isfinite(x) else None


def figure_value(x):
    """A figure for the report: a non-finite one (NaN or inf outputs) as the largest double, so that it fails its bound
    instead of being an input error."""
    return x if math.isfinite(x) else sys.float_info.max


def hf_config(path):
    """transformers' config for the config.json at path (keys starting with _ and the bookkeeping ones left out)."""
    from transformers import AutoConfig
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{path}: {e}")
    kw = {k: v for k, v in d.items() if not k.startswith("_") and k not in ("architectures", "transformers_version", "model_type")}
    return AutoConfig.for_model(d["model_type"], **kw)


def hf_model(cfg, dtype):
    """transformers' causal LM for cfg in dtype with eager attention, its initialisation seeded (the loaded weights
    replace it)."""
    import torch
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="eager")


def decoder(a):
    import torch
    from safetensors.torch import load_file
    import transformers
    transformers.logging.set_verbosity_error()
    cfg = hf_config(a.config)
    measurements, details = [], {"transformers": transformers.__version__, "torch": torch.__version__,
                                 "model_class": None, "attn_implementation": "eager", "runs": {}}
    keys_mismatch = 0
    for spec in a.run:
        label, _, folder = spec.partition(":")  # fp32, bf16, or either with a suffix: fp32_padded
        dtype_name = label.split("_")[0]
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
        # A run with a config.json of its own (e.g. with rope_scaling) is built from it.
        run_cfg = hf_config(f"{folder}/config.json") if os.path.exists(f"{folder}/config.json") else cfg
        model = hf_model(run_cfg, dtype)
        details["model_class"] = type(model).__name__
        weights = load_file(f"{folder}/model.safetensors")
        run = load_file(f"{folder}/run.safetensors")
        # transformers' parameters (a tied head is one parameter: the embedding) against the exported names.
        own = dict(model.named_parameters())
        missing = sorted(k for k in own if k not in weights)
        unexpected = sorted(k for k in weights if k not in own)
        shapes = sorted(k for k in weights if k in own and tuple(own[k].shape) != tuple(weights[k].shape))
        dtypes = sorted(k for k in weights if k in own and own[k].dtype != weights[k].dtype)
        keys_mismatch += len(missing) + len(unexpected) + len(shapes) + len(dtypes)
        r = {"tensors": len(weights), "missing": missing[:8], "unexpected": unexpected[:8], "shape_differs": shapes[:8],
             "dtype_differs": dtypes[:8]}
        # What matches is loaded; a parameter the project lacks is zero on this side (an absent bias adds nothing),
        # one it has that transformers lacks is not compared: the keys count the difference, the figures what follows.
        weights = {k: v for k, v in weights.items() if k in own and k not in shapes}
        ids = run["input_ids"]
        mask, positions = run.get("attention_mask"), run.get("position_ids")
        ref = forward_backward(model, weights, ids, mask, positions)
        logits = run["logits"] if mask is None else run["logits"].masked_fill(mask.unsqueeze(-1) == 0, 0)
        project = {"logits": logits, "loss": run["loss"].reshape(())}
        project.update({f"grad.{name}": run[f"grad.{name}"] for name in weights})
        units = {k: tolerance_units(project[k], ref[k]) for k in project}
        rel = {k: relative(project[k], ref[k]) for k in project}
        r.update({"loss_project": run["loss"].item(), "loss_transformers": ref["loss"].item(),
                  "logits_relative": finite(rel["logits"]),
                  "tolerance": dict(zip(("rtol", "atol"), TOLERANCES[str(dtype).replace("torch.", "")]))})
        if dtype == torch.float32:
            figure, worst = max(units.values()), units
        else:
            # bf16 against assert_close's bf16 tolerance fails for transformers against itself (its eager and sdpa
            # attention differ by ~1000 units on these logits): the figure is how far the project's bf16 lies from
            # the fp32 answer (transformers in fp32 on the same bf16 weights), in units of how far transformers'
            # own bf16 lies from it (RMS of the difference, per tensor: the logits and every weight matrix's gradient).
            truth_model = hf_model(run_cfg, torch.float32)
            truth = forward_backward(truth_model, {k: v.float() for k, v in weights.items()}, ids, mask, positions)
            worst = {}
            for k in project:
                # The loss is one number and biases and norm weights have a few dozen: their ratios are a few draws of
                # two rounding errors (fp32 judges them element by element); the logits and the weight matrices here.
                if project[k].dim() < 2:
                    continue
                e_ref = rms(ref[k], truth[k])
                worst[k] = rms(project[k], truth[k]) / e_ref if e_ref > 0 else (0.0 if rms(project[k], truth[k]) == 0 else math.inf)
            figure = max(worst.values())
            r["assert_close_units_worst"] = finite(max(units.values()))
            r["figure"] = "RMS(project bf16 - transformers fp32) / RMS(transformers bf16 - transformers fp32)"
        r["loss_relative"] = finite(rel["loss"])
        top = sorted(worst.items(), key=lambda kv: -kv[1])[:6]
        r["worst"] = [{"tensor": k, "figure": finite(v), "assert_close_units": finite(units[k]),
                       "relative": finite(rel[k])} for k, v in top]
        if mask is not None:
            r.update({"batch": list(ids.shape), "padding": int((mask == 0).sum().item()),
                      "max_position": int(positions.max().item()) if positions is not None else None})
        details["runs"][label] = r
        measurements.append({"name": f"transformers_{label}", "value": figure_value(figure), "unit": "ratio"})
    measurements.append({"name": "transformers_keys_mismatch", "value": keys_mismatch, "unit": "count"})
    emit(measurements, {"transformers": details})


def lora(a):
    import torch
    from safetensors.torch import load_file
    import peft
    from peft import LoraConfig, get_peft_model

    class One(torch.nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.proj = torch.nn.Linear(i, o, bias=True)

        def forward(self, x):
            return self.proj(x)

    def adapter(t, r, alpha, rslora):
        out_f, in_f = t["base.weight"].shape
        m = One(in_f, out_f)
        with torch.no_grad():
            m.proj.weight.copy_(t["base.weight"])
            m.proj.bias.copy_(t["base.bias"])
        pm = get_peft_model(m, LoraConfig(r=r, lora_alpha=alpha, target_modules=["proj"], lora_dropout=0.0,
                                          use_rslora=rslora, bias="none"))
        return pm, pm.base_model.model.proj

    worst_all, learn_ratios, details = 0.0, [], {"peft": peft.__version__, "torch": torch.__version__, "cases": {}}
    a_over_bound = 0.0
    torch.manual_seed(a.seed)
    for spec in a.case:
        name, r, alpha, rslora, lr, wd, path = spec.split(":", 6)
        r, alpha, rslora, lr, wd = int(r), float(alpha), rslora == "1", float(lr), float(wd)
        t = load_file(path)
        pm, layer = adapter(t, r, alpha, rslora)
        la, lb = layer.lora_A["default"].weight, layer.lora_B["default"].weight
        x, g = t["x"], t["g"]
        worst = {}
        with torch.no_grad():
            la.copy_(t["lora_A"])
            lb.copy_(t["lora_B.init"])
            worst["y.init"] = tolerance_units(t["y.init"], pm(x))
            lb.copy_(t["lora_B"])
            worst["y"] = tolerance_units(t["y"], pm(x))
            worst["merged.weight"] = tolerance_units(t["merged.weight"],
                                                     layer.base_layer.weight + layer.get_delta_weight("default"))
        opt = torch.optim.AdamW([la, lb], lr=lr, weight_decay=wd)
        (pm(x) * g).sum().backward()
        opt.step()
        with torch.no_grad():
            worst["step.lora_A"] = tolerance_units(t["step.lora_A"], la)
            worst["step.lora_B"] = tolerance_units(t["step.lora_B"], lb)
            worst["step.y"] = tolerance_units(t["step.y"], pm(x))
        # A fresh adapter as peft initialises it, one step on the same base and data.
        fresh, fl = adapter(t, r, alpha, rslora)
        fa, fb = fl.lora_A["default"].weight, fl.lora_B["default"].weight
        opt = torch.optim.AdamW([fa, fb], lr=lr, weight_decay=wd)
        (fresh(x) * g).sum().backward()
        opt.step()
        with torch.no_grad():
            peft_delta = fl.get_delta_weight("default")
            ratio = t["fresh.delta_weight"].double().norm().item() / max(peft_delta.double().norm().item(), 1e-300)
            a_std = t["fresh.lora_A"].double().std().item() / fa.double().std().item()
        learn_ratios.append(ratio)
        # peft draws A from kaiming_uniform_(a=sqrt(5)): every value within 1/sqrt(in); a normal of the same spread
        # (or a wider uniform) puts some of the 256 x r draws beyond it.
        a_over_bound = max(a_over_bound, t["fresh.lora_A"].abs().max().item() * math.sqrt(t["x"].shape[1]))
        worst_all = max(worst_all, max(worst.values()))
        details["cases"][name] = {"r": r, "alpha": alpha, "use_rslora": rslora, "scaling_peft": layer.scaling["default"],
                                  "tolerance_units": {k: finite(v) for k, v in worst.items()},
                                  "fresh_delta_norm_ratio": finite(ratio), "fresh_A_std_ratio": finite(a_std),
                                  "fresh_A_max_abs": t["fresh.lora_A"].abs().max().item(),
                                  "peft_A_bound": 1 / math.sqrt(t["x"].shape[1])}
    # The learning figure that is furthest from 1 (too slow or too fast from the initialisation).
    learn = max(learn_ratios, key=lambda v: abs(math.log(v)) if v > 0 else math.inf)
    emit([{"name": "peft", "value": figure_value(worst_all), "unit": "ratio"},
          {"name": "peft_fresh_step", "value": figure_value(learn), "unit": "ratio"},
          {"name": "fresh_A_within_peft_bound", "value": figure_value(a_over_bound), "unit": "ratio"}],
         {"peft": details})


def generate(a):
    """transformers' model for the config, on the exported weights, decoding with its own cache (past_key_values): the
    prompt, then each token the project fed, one at a time; its logits after each against the project's, and the
    bytes its cache holds per token against the project's cache."""
    import torch
    from safetensors.torch import load_file
    import transformers
    transformers.logging.set_verbosity_error()
    cfg = hf_config(a.config)
    model = hf_model(cfg, torch.float32)
    weights = load_file(f"{a.dir}/model.safetensors")
    run = load_file(f"{a.dir}/run.safetensors")
    own = dict(model.named_parameters())
    mismatch = sorted(set(own) ^ set(weights))
    model.load_state_dict({k: v for k, v in weights.items() if k in own}, strict=False)
    model.eval()
    ids, fed, theirs = run["input_ids"], run["generated"].tolist(), run["logits"]
    worst, per_step, agree, not_greedy = 0.0, [], 0, 0
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)
        past = out.past_key_values
        mine = [out.logits[0, -1]]
        # The project's prompt went in two calls: the second chunk's logits, every position, against these (the
        # whole prompt in one call), where its tokens met the cache and each other.
        chunk = run["chunk_logits"] if "chunk_logits" in run else None
        chunk_units = (tolerance_units(chunk, out.logits[0, -chunk.shape[0]:]) if chunk is not None
                       and chunk.shape[0] <= ids.shape[1] else math.inf)
        for t in fed:
            agree += int(mine[-1].argmax().item() == t)
            # The fed token is greedy where transformers' logit for it is its largest, within assert_close's fp32
            # tolerance of that largest (a near tie either way is no fault).
            top = mine[-1].max().item()
            not_greedy += int(top - mine[-1][t].item() > 1e-5 + 1.3e-6 * abs(top))
            out = model(input_ids=torch.tensor([[t]]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            mine.append(out.logits[0, -1])
    for s, m in enumerate(mine):
        u = tolerance_units(theirs[s], m) if s < theirs.shape[0] else math.inf
        per_step.append(finite(u))
        worst = max(worst, u)
    worst = max(worst, chunk_units)
    # The bytes transformers' cache holds per token (its keys and values, whatever class holds them).
    tensors = []
    layers = getattr(past, "layers", None)
    if layers is not None:
        tensors = [t for layer in layers for t in (layer.keys, layer.values) if t is not None]
    elif hasattr(past, "key_cache"):
        tensors = list(past.key_cache) + list(past.value_cache)
    else:
        tensors = [t for kv in past for t in kv]
    tokens = ids.shape[1] + len(fed)
    their_bytes = sum(t.numel() * t.element_size() for t in tensors) / tokens
    ratio = run["cache_bytes_per_token"].item() / their_bytes if their_bytes else math.inf
    details = {"transformers": transformers.__version__, "model_class": type(model).__name__, "prompt": ids.shape[1],
               "steps": len(fed), "units_per_step": per_step[:40], "greedy_agreement": f"{agree}/{len(fed)}",
               "not_greedy_steps": not_greedy,
               "prompt_chunk": {"tokens": None if chunk is None else chunk.shape[0], "units": finite(chunk_units)},
               "cache_bytes_per_token": {"project": run["cache_bytes_per_token"].item(), "transformers": their_bytes},
               "parameters_mismatch": mismatch[:8]}
    emit([{"name": "cached_decode_vs_transformers", "value": figure_value(worst if not mismatch else math.inf),
           "unit": "ratio"},
          {"name": "cache_bytes_vs_transformers", "value": figure_value(ratio), "unit": "ratio"},
          {"name": "greedy_vs_transformers", "value": not_greedy, "unit": "count"}],
         {"transformers_generation": details})


def peft_counts(a):
    """peft's trainable count of LoraConfig(r, target_modules=SPELLING) on transformers' model for the config, for each
    spelling: "all-linear", a regular expression (peft's string form) or comma-separated module names."""
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model
    transformers.logging.set_verbosity_error()
    cfg = hf_config(a.config)
    counts = {}
    for spelling in a.spelling:
        model = hf_model(cfg, torch.float32)
        regex = spelling == "all-linear" or any(ch in spelling for ch in "*+?()[]{}|^$\\")
        pm = get_peft_model(model, LoraConfig(r=a.r, lora_alpha=2 * a.r, lora_dropout=0.0,
                                              target_modules=spelling if regex else spelling.split(",")))
        counts[spelling] = sum(p.numel() for p in pm.parameters() if p.requires_grad)
    emit([], {"peft_counts": counts})


def routed_away_params(model, cfg):
    """The parameters of transformers' model for cfg that a token does not meet: in each sparse layer, the experts it
    is not routed to (each expert's share of the layer's experts, measured on the modules). 0 for a dense model."""
    inactive = 0
    for layer in model.model.layers:
        experts = getattr(layer.mlp, "experts", None)
        if experts is not None:
            e = cfg.num_local_experts if hasattr(cfg, "num_local_experts") else cfg.num_experts
            inactive += sum(x.numel() for x in experts.parameters()) // e * (e - cfg.num_experts_per_tok)
    return inactive


def param_counts(a):
    """For each config: transformers' model built on the meta device (no memory), its parameters, those a token
    meets (the model less, in each sparse layer, the experts it is not routed to: each expert's share of the layer's
    experts, from the modules themselves), and peft's trainable count of LoraConfig(r, target_modules=TARGETS) on it."""
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    transformers.logging.set_verbosity_error()
    if int(transformers.__version__.split(".")[0]) < 5:  # 4.x names Mixtral's block and builds experts as Linears
        emit(skip=f"transformers {transformers.__version__}: the counts are held to transformers 5's modules "
                  "(ci/setup-python.sh installs 5.24)")
        return
    counts = {}
    for path in a.config:
        cfg = hf_config(path)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(cfg)
        params = sum(x.numel() for x in model.parameters())
        inactive = routed_away_params(model, cfg)
        with torch.device("meta"):
            pm = get_peft_model(model, LoraConfig(r=a.r, target_modules=a.targets.split(",")), low_cpu_mem_usage=True)
        lora = sum(x.numel() for x in pm.parameters() if x.requires_grad)
        counts[path] = {"params": params, "params_active": params - inactive, "lora": lora}
    emit([], {"param_counts": counts, "transformers": transformers.__version__})


def peft_model(a):
    """peft's get_peft_model on transformers' model for the config (the project's base weights), LoraConfig(r,
    lora_alpha, target_modules, dropout 0): the modules it adapts and its trainable count against the project's; the
    project's A and B loaded into its adapters; logits, loss and every adapter's gradient, then A and B after one
    torch.optim.AdamW step, against the project's (the step in units of lr)."""
    import torch
    from safetensors.torch import load_file
    import transformers
    import peft
    from peft import LoraConfig, get_peft_model
    transformers.logging.set_verbosity_error()
    cfg = hf_config(a.config)
    model = hf_model(cfg, torch.float32)
    weights = load_file(f"{a.dir}/model.safetensors")
    adapters = load_file(f"{a.dir}/lora.safetensors")
    run = load_file(f"{a.dir}/run.safetensors")
    own = dict(model.named_parameters())
    base_mismatch = sorted(set(own) ^ set(weights))
    model.load_state_dict({k: v for k, v in weights.items() if k in own}, strict=False)
    pm = get_peft_model(model, LoraConfig(r=a.r, lora_alpha=a.alpha, target_modules=a.targets.split(","),
                                          lora_dropout=0.0))
    prefix = "base_model.model."
    theirs = {n[len(prefix):] if n.startswith(prefix) else n: m for n, m in pm.named_modules()
              if hasattr(m, "lora_A") and "default" in getattr(m, "lora_A", {})}
    mine = sorted({k.rsplit(".", 1)[0] for k in adapters})
    modules_mismatch = sorted(set(mine) ^ set(theirs))
    trainable = sum(p.numel() for p in pm.parameters() if p.requires_grad)
    with torch.no_grad():
        for name in mine:
            if name in theirs:
                theirs[name].lora_A["default"].weight.copy_(adapters[f"{name}.lora_A"])
                theirs[name].lora_B["default"].weight.copy_(adapters[f"{name}.lora_B"])
    ids = run["input_ids"]
    # peft's merge_adapter and unmerge_adapter on the project's adapters, against the project's merge and unmerge; and
    # the adapter the project saved, loaded by PeftModel.from_pretrained onto a fresh base, against its logits.
    pm.eval()
    with torch.no_grad():
        pm.merge_adapter()
        merged = pm(input_ids=ids).logits
        pm.unmerge_adapter()
        unmerged = pm(input_ids=ids).logits
        saved = saved_adapter_logits(cfg, weights, own, f"{a.dir}/adapter", ids)
    merge_units = {"merged": tolerance_units(run["merged.logits"], merged),
                   "unmerged": tolerance_units(run["unmerged.logits"], unmerged)}
    # The project's adapted weights after its unmerge, against the base weights it wrote before LoRA (up to fp32's
    # rounding of W + dW - dW): an unmerge that left the delta in computes the merged model's logits, which the
    # comparison above cannot tell from an unmerged one's.
    unmerged_weights = 0.0 if mine else math.inf
    for name in mine:
        key, base = f"unmerged.{name}.weight", f"{name}.weight"
        if key not in run or base not in weights or run[key].shape != weights[base].shape:
            unmerged_weights = math.inf
            continue
        unmerged_weights = max(unmerged_weights, tolerance_units(weights[base], run[key]))
    saved_units = tolerance_units(run["logits"], saved) if saved is not None else math.inf
    pm.train()
    out = pm(input_ids=ids, labels=ids)
    out.loss.backward()
    units = {"logits": tolerance_units(run["logits"], out.logits.detach()),
             "loss": tolerance_units(run["loss"].reshape(1), out.loss.detach().float().reshape(1))}
    grads = 0.0
    for name, m in theirs.items():
        for side in ("lora_A", "lora_B"):
            key = f"grad.{name}.{side}"
            g = getattr(m, side)["default"].weight.grad
            grads = max(grads, tolerance_units(run[key], g) if key in run and g is not None else math.inf)
    units["grads"] = grads
    opt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=a.lr, weight_decay=a.weight_decay)
    opt.step()
    optimizer_mismatch = adamw_mismatch(run, opt.param_groups)
    # The step: AdamW's first update is lr * g / (|g| + eps) per element (plus the decay), so where a gradient is near
    # eps, differences within the gradients' tolerance move it by up to lr. Judged in units of lr: the largest
    # difference of A and B after the step, over lr (a wrong rate, decay or bias correction moves it by about 1 or
    # more); the assert_close units are a detail.
    after, after_units = 0.0, 0.0
    for name, m in theirs.items():
        for side in ("lora_A", "lora_B"):
            key = f"after.{name}.{side}"
            w = getattr(m, side)["default"].weight.detach()
            if key not in run or tuple(run[key].shape) != tuple(w.shape):
                after = after_units = math.inf
                continue
            after = max(after, (run[key].double() - w.double()).abs().max().item() / a.lr)
            after_units = max(after_units, tolerance_units(run[key], w))
    units["step_over_lr"] = after
    details_step_units = after_units
    worst = max(units["logits"], units["loss"], units["grads"])
    details = {"peft": peft.__version__, "transformers": transformers.__version__, "adapted": len(theirs),
               "trainable": {"project": int(run["trainable"].item()), "peft": trainable},
               "modules_mismatch": modules_mismatch[:8], "base_mismatch": base_mismatch[:8],
               "units": {k: finite(v) for k, v in units.items()}, "step_assert_close_units": finite(details_step_units),
               "merge_units": {k: finite(v) for k, v in merge_units.items()}, "saved_adapter_units": finite(saved_units),
               "unmerged_weights_units": finite(unmerged_weights)}
    emit([{"name": "peft_model_modules_mismatch", "value": len(modules_mismatch) + len(base_mismatch) + 0.0,
           "unit": "count"},
          {"name": "peft_model_trainable_ratio", "value": figure_value(run["trainable"].item() / trainable if trainable
                                                                        else math.inf), "unit": "ratio"},
          {"name": "peft_model_vs_project", "value": figure_value(worst), "unit": "ratio"},
          {"name": "peft_model_step_over_lr", "value": figure_value(units["step_over_lr"]), "unit": "ratio"},
          {"name": "peft_model_optimizer_mismatch", "value": optimizer_mismatch, "unit": "count"},
          {"name": "peft_model_merge_unmerge", "value": figure_value(max(merge_units.values())), "unit": "ratio"},
          {"name": "peft_model_unmerged_weights", "value": figure_value(unmerged_weights), "unit": "ratio"},
          {"name": "peft_model_saved_adapter", "value": figure_value(saved_units), "unit": "ratio"}],
         {"peft_model": details})


def adamw_mismatch(run, groups):
    """How many of AdamW's settings (beta1, beta2, eps, weight decay, amsgrad, and the elements each setting covers)
    the project's run (its "adamw" rows, one per parameter group) used other than the answer key's optimizer (the
    param_groups of a torch.optim.AdamW): a first step is lr * g / (|g| + eps) whatever the betas, and a group that
    spares some tensors the decay moves a few steps by less than their tolerance, so steps alone cannot show them.
    Groups of equal settings are one (transformers' Trainer splits decay from no-decay even at weight decay 0). A run
    without the rows misses all six."""
    def merged(rows):
        out = {}
        for r in rows:
            key = tuple(float(f"{x:.12g}") for x in r[:5])
            out[key] = out.get(key, 0.0) + r[5]
        return out
    theirs = merged([[g["betas"][0], g["betas"][1], g["eps"], g["weight_decay"], float(g["amsgrad"]),
                      float(sum(p.numel() for p in g["params"]))] for g in groups])
    if "adamw" not in run or run["adamw"].numel() % 6 != 0 or run["adamw"].numel() == 0:
        return 6.0
    mine = merged(run["adamw"].double().reshape(-1, 6).tolist())
    if len(mine) == 1 and len(theirs) == 1:  # one setting each: which of the six differ
        (m, mn), (t, tn) = next(iter(mine.items())), next(iter(theirs.items()))
        return float(sum(not math.isclose(x, y, rel_tol=1e-9, abs_tol=0.0) for x, y in zip(m, t)) + (mn != tn))
    # Otherwise each setting whose elements differ (a tensor under another setting than the key's) counts once.
    return float(sum(mine.get(k, 0.0) != theirs.get(k, 0.0) for k in set(mine) | set(theirs)))


def six_lines(cfg, weights, adapters, a, ids, labels):
    """The series' six lines on transformers' model for cfg (weights loaded, fp32): get_peft_model with
    LoraConfig(r, lora_alpha, target_modules, dropout 0), the project's starting A and B copied in, then
    Trainer(...).train() over the rows (ids, labels) in order, a.batch per step. Returns (model, each step's loss,
    the optimizer's settings)."""
    import tempfile
    import torch
    from peft import LoraConfig, get_peft_model
    from torch.utils.data import SequentialSampler
    from transformers import Trainer, TrainingArguments
    model = hf_model(cfg, torch.float32)
    own = dict(model.named_parameters())
    model.load_state_dict({k: v for k, v in weights.items() if k in own}, strict=False)
    pm = get_peft_model(model, LoraConfig(r=a.r, lora_alpha=a.alpha, target_modules=a.targets.split(","),
                                          lora_dropout=0.0))
    prefix = "base_model.model."
    with torch.no_grad():
        for n, m in pm.named_modules():
            name = n[len(prefix):] if n.startswith(prefix) else n
            if hasattr(m, "lora_A") and "default" in getattr(m, "lora_A", {}) and f"{name}.lora_A" in adapters:
                m.lora_A["default"].weight.copy_(adapters[f"{name}.lora_A"])
                m.lora_B["default"].weight.copy_(adapters[f"{name}.lora_B"])
    rows = [{"input_ids": ids[i], "labels": labels[i]} for i in range(ids.shape[0])]
    losses = []

    class InOrder(Trainer):  # the rows in the order the project trained them; each step's loss as computed
        def _get_train_sampler(self, *args, **kwargs):
            return SequentialSampler(self.train_dataset)

        def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
            out = super().compute_loss(model, inputs, return_outputs=return_outputs, **kwargs)
            losses.append(float((out[0] if return_outputs else out).detach().float()))
            return out

    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(output_dir=tmp, per_device_train_batch_size=a.batch, max_steps=ids.shape[0] // a.batch,
                                 learning_rate=a.lr, lr_scheduler_type="linear", warmup_steps=0,
                                 weight_decay=a.weight_decay, max_grad_norm=a.clip, optim="adamw_torch",
                                 save_strategy="no", logging_strategy="no", report_to=[], use_cpu=True, seed=0,
                                 dataloader_num_workers=0, disable_tqdm=True)
        trainer = InOrder(model=pm, args=args, train_dataset=rows)
        trainer.train()
    return pm, losses, trainer.optimizer.param_groups


def lora_sft(a):
    """Chapter 5's six-line LoRA SFT (transformers' Trainer with peft) against the project's SFT loop on the same
    start: the rows (this side renders them with Qwen2.5's own template), each step's loss (assert_close units), the
    adapters after the last step (in units of lr: AdamW moves an element by about lr a step), and the project's
    trained adapter reloaded by peft (its logits)."""
    import torch
    from safetensors.torch import load_file
    import transformers
    import peft
    import chat_template
    transformers.logging.set_verbosity_error()
    cfg = hf_config(a.config)
    weights = load_file(f"{a.dir}/model.safetensors")
    adapters = load_file(f"{a.dir}/lora.safetensors")
    run = load_file(f"{a.dir}/run.safetensors")
    rows = run["input_ids"].shape[0]
    if rows % a.batch:
        die(f"{a.dir}/run.safetensors: field 'input_ids': {rows} rows are not steps x --batch {a.batch}")
    if run["input_ids"].shape != run["labels"].shape:
        die(f"{a.dir}/run.safetensors: field 'labels': shape {tuple(run['labels'].shape)}, input_ids' is "
            f"{tuple(run['input_ids'].shape)}")
    encoded, _ = chat_template.encode(a)
    length = max(len(e["tokens"]) for e in encoded)
    ids = torch.full((rows, length), chat_template.IM_END, dtype=torch.long)
    labels = torch.full((rows, length), chat_template.IGNORE, dtype=torch.long)
    for r in range(rows):
        e = encoded[r % len(encoded)]
        ids[r, :len(e["tokens"])] = torch.tensor(e["tokens"])
        labels[r, :len(e["targets"])] = torch.tensor(e["targets"])
    if run["input_ids"].shape == ids.shape:
        rows_mismatch = int(((run["input_ids"] != ids).any(1) | (run["labels"] != labels).any(1)).sum())
    else:
        rows_mismatch = rows
    try:  # Trainer needs accelerate, and transformers' arguments changed over its versions
        pm, losses, groups = six_lines(cfg, weights, adapters, a, ids, labels)
    except (ImportError, TypeError) as e:
        emit(skip=f"transformers' Trainer with peft could not run here (transformers {transformers.__version__}, "
                  f"peft {peft.__version__}: {type(e).__name__}: {e})")
        return
    # The adapters the run started from (which the Trainer was handed too, so their start is held here to peft's own
    # rule): B zero, A within kaiming_uniform(a = sqrt 5)'s +-1/sqrt(fan_in). A B drawn from the start changes the model
    # before any step, and both loops would agree on it.
    b_start, a_start = 0.0, 0.0
    for k, v in adapters.items():
        if k.endswith(".lora_B"):
            b_start = max(b_start, v.abs().max().item())
        elif k.endswith(".lora_A"):
            a_start = max(a_start, v.abs().max().item() * math.sqrt(v.shape[1]))
    if not adapters:
        b_start = a_start = math.inf
    theirs = torch.tensor(losses, dtype=torch.float32)
    mine = run["losses"].float()
    loss_units = tolerance_units(mine, theirs) if mine.shape == theirs.shape else math.inf
    prefix = "base_model.model."
    after, seen = 0.0, 0
    for n, m in pm.named_modules():
        name = n[len(prefix):] if n.startswith(prefix) else n
        if not (hasattr(m, "lora_A") and "default" in getattr(m, "lora_A", {})):
            continue
        for side in ("lora_A", "lora_B"):
            key = f"after.{name}.{side}"
            w = getattr(m, side)["default"].weight.detach()
            if key not in run or tuple(run[key].shape) != tuple(w.shape):
                after = math.inf
                continue
            seen += 1
            after = max(after, (run[key].double() - w.double()).abs().max().item() / a.lr)
    if seen == 0:
        after = math.inf
    own = dict(hf_model(cfg, torch.float32).named_parameters())
    with torch.no_grad():
        saved = saved_adapter_logits(cfg, weights, own, f"{a.dir}/adapter", ids[:1])
    saved_units = tolerance_units(run["trained.logits"], saved) if saved is not None else math.inf
    details = {"peft": peft.__version__, "transformers": transformers.__version__, "rows": int(rows),
               "length": int(length), "losses": {"project": [finite(x) for x in mine.tolist()],
                                                  "trainer": [finite(x) for x in losses]}}
    emit([{"name": "lora_sft_rows_mismatch", "value": float(rows_mismatch), "unit": "count"},
          {"name": "lora_sft_optimizer_mismatch", "value": adamw_mismatch(run, groups), "unit": "count"},
          {"name": "lora_sft_losses_vs_trainer", "value": figure_value(loss_units), "unit": "ratio"},
          {"name": "lora_sft_adapters_vs_trainer_over_lr", "value": figure_value(after), "unit": "ratio"},
          {"name": "lora_sft_saved_adapter", "value": figure_value(saved_units), "unit": "ratio"},
          {"name": "lora_sft_start_b_max_abs", "value": figure_value(b_start), "unit": "ratio"},
          {"name": "lora_sft_start_a_over_bound", "value": figure_value(a_start), "unit": "ratio"}],
         {"lora_sft": details})


def saved_adapter_logits(cfg, weights, own, folder, ids):
    """PeftModel.from_pretrained(transformers' model on the base weights, folder): the logits of ids, or None where
    peft cannot load the folder (its reason on stderr)."""
    import torch
    from peft import PeftModel
    base = hf_model(cfg, torch.float32)
    base.load_state_dict({k: v for k, v in weights.items() if k in own}, strict=False)
    try:
        m = PeftModel.from_pretrained(base, folder)
    except Exception as e:  # a file peft refuses: the figure is infinite, the reason a detail on stderr
        sys.stderr.write(f"{PROG}: PeftModel.from_pretrained({folder}): {type(e).__name__}: {e}\n")
        return None
    m.eval()
    return m(input_ids=ids).logits


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    d = sub.add_parser("decoder")
    d.add_argument("--config", required=True)
    d.add_argument("--run", action="append", required=True, help="fp32:DIR, bf16:DIR, fp32_padded:DIR ...")
    g = sub.add_parser("generate")
    g.add_argument("--config", required=True)
    g.add_argument("--dir", required=True)

    def lora_model_arguments(q):
        """The arguments of a LoRA run on the whole model (peft_model, lora_sft)."""
        for name in ("config", "dir"):
            q.add_argument(f"--{name}", required=True)
        q.add_argument("--r", type=int, required=True)
        q.add_argument("--targets", required=True, help="comma-separated module names")
        for name in ("alpha", "lr", "weight-decay"):
            q.add_argument(f"--{name}", type=float, required=True)
        return q

    lora_model_arguments(sub.add_parser("peft_model"))
    pc = sub.add_parser("peft_counts")
    pc.add_argument("--config", required=True)
    pc.add_argument("--r", type=int, required=True)
    pc.add_argument("--spelling", action="append", required=True, help="all-linear, a regex, or module names")
    pn = sub.add_parser("param_counts")
    pn.add_argument("--config", action="append", required=True)
    pn.add_argument("--r", type=int, required=True)
    pn.add_argument("--targets", required=True)
    ls = lora_model_arguments(sub.add_parser("lora_sft"))
    ls.add_argument("--template", required=True)
    ls.add_argument("--conversations", required=True)
    ls.add_argument("--batch", type=int, required=True)
    ls.add_argument("--clip", type=float, required=True)
    lo = sub.add_parser("lora")
    lo.add_argument("--case", action="append", required=True)
    lo.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    imports()
    if a.what == "decoder":
        for spec in a.run:
            label = spec.partition(":")[0]
            if label.split("_")[0] not in ("fp32", "bf16") or not spec.partition(":")[2]:
                die(f"--run '{spec}': expected LABEL:DIR, LABEL fp32 or bf16 with an optional _suffix")
        decoder(a)
    elif a.what == "generate":
        generate(a)
    elif a.what == "peft_model":
        peft_model(a)
    elif a.what == "peft_counts":
        peft_counts(a)
    elif a.what == "param_counts":
        param_counts(a)
    elif a.what == "lora_sft":
        lora_sft(a)
    else:
        lora(a)


if __name__ == "__main__":
    main(sys.argv[1:])
