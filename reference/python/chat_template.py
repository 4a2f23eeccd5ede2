"""The answer key's chat template: conversations rendered with Qwen2.5's own chat_template (its public
tokenizer_config.json, shipped in reference/data/chat) through jinja2 as transformers' apply_chat_template renders it
(a sandboxed environment with trim_blocks and lstrip_blocks, loopcontrols, its tojson), and the answer spans derived
from that rendering: for the assistant message at index i, the text that render(messages[:i + 1]) adds to
render(messages[:i], add_generation_prompt=True) is the answer (its content and <|im_end|>\\n).

The text is then tokenised as the project's stand-in tokenizer does (UTF-8 bytes, <|im_start|> = 256 and
<|im_end|> = 257), with a target per token: the byte (or 257 for the <|im_end|> that closes an answer) inside an
answer span, -100 elsewhere (the "\\n" after an answer's <|im_end|> included).

usage: chat_template.py --template tokenizer_config.json --conversations file.jsonl
Prints one JSON object: {"conversations": [{"text", "tokens", "targets", "answers"}], "details": {...}}; exit 2 with
one line naming the file and field on bad input."""
import argparse
import hashlib
import json
import sys

PROG = "chat_template.py"
IM_START, IM_END, IGNORE = 256, 257, -100
SPECIAL = {"<|im_start|>": IM_START, "<|im_end|>": IM_END}


def die(msg):
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.exit(2)


def environment():
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def tokenise(text, spans):
    """UTF-8 bytes and the two special tokens; a token's target is set when it lies in an answer span, except the
    span's last character (the newline after <|im_end|>, which the template writes and the model need not predict)."""
    labelled = [False] * len(text)
    for b, e in spans:
        for i in range(b, e - 1):
            labelled[i] = True
    tokens, targets = [], []
    at = 0
    while at < len(text):
        special = next((s for s in SPECIAL if text.startswith(s, at)), None)
        if special:
            tokens.append(SPECIAL[special])
            targets.append(SPECIAL[special] if labelled[at] else IGNORE)
            at += len(special)
            continue
        for byte in text[at].encode("utf-8"):
            tokens.append(byte)
            targets.append(byte if labelled[at] else IGNORE)
        at += 1
    return tokens, targets


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--template", required=True)
    p.add_argument("--conversations", required=True)
    a = p.parse_args(argv)
    try:
        import jinja2  # noqa: F401
    except ImportError as e:
        print(json.dumps({"skip": f"jinja2 is not importable by {sys.executable} ({e})"}))
        return
    out, details = encode(a)
    print(json.dumps({"conversations": out, "details": details}, ensure_ascii=False))


def encode(a):
    """The conversations of a.conversations rendered with a.template's chat_template and tokenised: a list of
    {"text", "tokens", "targets", "answers"}, and the details (jinja2's version, the template's hash, transformers'
    render beside it). Exits 2 with one line naming the file and field on bad input."""
    import jinja2
    try:
        with open(a.template, encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{a.template}: field '(json)': {e}")
    if not isinstance(cfg, dict) or not isinstance(cfg.get("chat_template"), str):
        die(f"{a.template}: field 'chat_template': missing or not a string")
    source = cfg["chat_template"]
    template = environment().from_string(source)
    convs = []
    try:
        with open(a.conversations, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    msgs = json.loads(line)["messages"]
                    if not all(isinstance(m["role"], str) and isinstance(m["content"], str) for m in msgs):
                        raise TypeError("role and content must be strings")
                except (ValueError, KeyError, TypeError) as e:
                    die(f"{a.conversations}:{n}: field 'messages': {e}")
                convs.append(msgs)
    except OSError as e:
        die(f"{a.conversations}: field '(file)': {e}")

    def render(msgs, gen=False):
        return template.render(messages=msgs, add_generation_prompt=gen, tools=None)

    out = []
    for n, msgs in enumerate(convs, 1):
        text = render(msgs)
        spans = []
        for i, m in enumerate(msgs):
            if m["role"] != "assistant":
                continue
            prefix, full = render(msgs[:i], gen=True), render(msgs[:i + 1])
            if not full.startswith(prefix) or not text.startswith(full):
                die(f"{a.conversations}:{n}: field 'messages[{i}]': the rendering of the first {i} messages is not a "
                    "prefix of the rendering with the answer (the template does not render turn by turn)")
            if not full.endswith("<|im_end|>\n"):
                die(f"{a.conversations}:{n}: field 'messages[{i}]': the answer's rendering does not end in <|im_end|>")
            spans.append((len(prefix), len(full)))
        tokens, targets = tokenise(text, spans)
        out.append({"text": text, "tokens": tokens, "targets": targets, "answers": len(spans)})
    details = {"jinja2": jinja2.__version__, "template_sha256": hashlib.sha256(source.encode()).hexdigest(),
               "template": a.template}
    # Where transformers is importable, its own renderer must give the same text (a check of this environment).
    try:
        from transformers.utils.chat_template_utils import render_jinja_template
        rendered, _ = render_jinja_template(conversations=convs, chat_template=source, add_generation_prompt=False)
        details["same_as_transformers_render"] = [r == c["text"] for r, c in zip(rendered, out)] == [True] * len(out)
    except Exception as e:  # noqa: BLE001 (an optional cross-check: its absence is recorded, not an error)
        details["same_as_transformers_render"] = f"not checked ({type(e).__name__}: {e})"
    return out, details


if __name__ == "__main__":
    main(sys.argv[1:])
