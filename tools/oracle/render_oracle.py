#!/usr/bin/env python3
"""Reference prompt texts for the render golden suite: vLLM's chat preprocessing + Jinja2 as
transformers configures it. Independent of stitch's Go code on purpose: it is the oracle.

Usage: python3 tools/oracle/render_oracle.py TEMPLATE_NAME TEMPLATE_FILE TOKENIZER_CONFIG [--responses] \\
           < testdata/render/cases.jsonl > testdata/render/TEMPLATE_NAME.text.jsonl
       python3 tools/oracle/render_oracle.py --families testdata/render/families.json \\
           testdata/render/family_cases.jsonl

       python3 tools/oracle/render_oracle.py --content-formats testdata/jinja/content_format.json

The second form renders the family cases with every template of the manifest and writes
testdata/render/FAMILY/TEMPLATE.text.jsonl and TEMPLATE.format (the content format vLLM detects).
The third recomputes the content format of the small templates listed in content_format.json.

With --responses the input lines are Responses requests {"name","instructions"?,"input","tools"?,
"chat_template_kwargs"?} (responses_cases.jsonl): they are first mapped to chat messages the way
stitch documents it (render.FromResponses), reimplemented here independently, and always rendered
with add_generation_prompt=True.

TEMPLATE_FILE is a .jinja file, or "-" to use tokenizer_config.json's chat_template.
Each output line is {"name", "text"} or {"name", "error"} (ensure_ascii, so no raw U+2028).
"""
import json
import os
import sys
from collections import deque
from datetime import datetime

from typing import Any, Literal, Optional

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.ext import loopcontrols
from pydantic import BaseModel, ConfigDict
from jinja2.sandbox import ImmutableSandboxedEnvironment

assert jinja2.__version__ == "3.1.6", jinja2.__version__  # pydantic 2.x models the request like vLLM

SPECIAL_KEYS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


def token_str(v):
    if isinstance(v, dict):
        return v.get("content")
    return v


def special_tokens_map(config):
    # transformers' special_tokens_map: the set special tokens as strings.
    out = {}
    for k in SPECIAL_KEYS:
        v = token_str(config.get(k))
        if isinstance(v, str):
            out[k] = v
    if isinstance(config.get("additional_special_tokens"), list):
        out["additional_special_tokens"] = [token_str(v) for v in config["additional_special_tokens"]]
    return out


class _Generation(jinja2.ext.Extension):
    # transformers' {% generation %} block (AssistantTracker), reduced to its body.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


def make_env():
    # transformers' _compile_jinja_template setup.
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime(2026, 1, 2, 3, 4, 5).strftime(fmt)  # fixed: goldens must not depend on the clock

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


class _WalkFailed(Exception):
    pass


def _reads(node, name, key=None):
    """node reads variable name (or its key item/attribute), seen through filters, tests and
    slices: the access shapes vLLM's detection (vllm/renderers/hf.py) accepts."""
    if isinstance(node, jinja2.nodes.Filter):
        return node.node is not None and _reads(node.node, name, key)
    if isinstance(node, jinja2.nodes.Test):
        return _reads(node.node, name, key)
    if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
        return _reads(node.node, name, key)
    plain = lambda n: isinstance(n, jinja2.nodes.Name) and n.ctx == "load" and n.name == name
    if key is None:
        return plain(node)
    if isinstance(node, jinja2.nodes.Getitem):
        return plain(node.node) and isinstance(node.arg, jinja2.nodes.Const) and node.arg.value == key
    if isinstance(node, jinja2.nodes.Getattr):
        return plain(node.node) and node.attr == key
    return False


def _target_name(node):
    if not isinstance(node, jinja2.nodes.Name):
        raise _WalkFailed()  # vLLM asserts a plain name and falls back to "string"
    return node.name


def content_format(env, source):
    """vLLM's "auto" content format: "openai" when the template loops over the content of a
    message taken from a loop over messages (or over a variable assigned from messages)."""
    try:
        tree = env.parse(source)
        names, queue, seen = ["messages"], deque(["messages"]), {"messages"}
        assigns = list(tree.find_all(jinja2.nodes.Assign))
        while queue:
            cur = queue.popleft()
            for a in assigns:
                if _reads(a.node, cur):
                    n = _target_name(a.target)
                    names.append(n)
                    if n not in seen:
                        seen.add(n)
                        queue.append(n)
        loops = list(tree.find_all(jinja2.nodes.For))
        items = []
        for loop in loops:
            if any(_reads(loop.iter, n) for n in names):
                items.append(_target_name(loop.target))
        for loop in loops:
            if any(_reads(loop.iter, n, "content") for n in items):
                _target_name(loop.target)
                return "openai"
        return "string"
    except (_WalkFailed, jinja2.TemplateSyntaxError):
        return "string"


def part_value(part, fmt):
    """One content part as vLLM's _parse_chat_message_content_part returns it: the text (string
    format) or {"type": "text", "text"} (openai format); None for text/refusal parts without text."""
    if isinstance(part, str):
        text = part
    else:
        t = part.get("type")
        if t in ("text", "input_text", "output_text"):
            text = part.get("text")
        elif t == "refusal":
            text = part.get("refusal")
        elif t == "thinking":
            text = part.get("thinking")
        else:
            raise ValueError("unsupported part type %r" % t)
        if t in ("text", "refusal") and text is None:
            return None
    return {"type": "text", "text": text} if fmt == "openai" else text


def preprocess(messages, fmt="string"):
    """vLLM chat_utils.parse_chat_messages + _postprocess_messages in content format fmt."""
    conv = []
    for m in messages:
        role = m["role"]
        content = m.get("content")
        if content is None:
            parts = []
        elif isinstance(content, str):
            parts = [{"type": "text", "text": content}]
        else:
            parts = content
        values = [v for v in (part_value(p, fmt) for p in parts) if v]  # falsy parts are dropped
        msg = {"role": role, "content": values if fmt == "openai" else "\n".join(values)}
        if role == "assistant":
            if m.get("tool_calls") is not None:
                calls = []
                for tc in m["tool_calls"]:
                    # vLLM's request validation (pydantic over openai's TypedDicts) keeps only the
                    # declared keys, in declaration order: id, function{arguments, name}, type.
                    c = {}
                    if "id" in tc:
                        c["id"] = tc["id"]
                    c["function"] = {"arguments": tc["function"].get("arguments"), "name": tc["function"]["name"]}
                    if "type" in tc:
                        c["type"] = tc["type"]
                    calls.append(c)
                msg["tool_calls"] = calls
            reasoning = m.get("reasoning")
            if reasoning is None:
                reasoning = m.get("reasoning_content")
            if reasoning is not None:
                msg["reasoning"] = reasoning
                msg["reasoning_content"] = reasoning
        elif role == "tool":
            if "tool_call_id" in m:
                msg["tool_call_id"] = m["tool_call_id"]
            if isinstance(msg["content"], list):
                # Tool results go back to one string, empty parts kept.
                texts = [p.get("text", "") for p in msg["content"]]
                msg["content"] = "\n".join(texts) if texts else ""
        if isinstance(m.get("name"), str):
            msg["name"] = m["name"]
        if isinstance(m.get("task"), str):
            msg["task"] = m["task"]
        if role == "developer":
            msg["tools"] = None
        conv.append(msg)
    for msg in conv:
        if msg["role"] == "assistant" and "tool_calls" in msg:
            if len(msg["tool_calls"]) == 0:
                del msg["tool_calls"]
                continue
            for tc in msg["tool_calls"]:
                a = tc["function"].get("arguments")
                if isinstance(a, str):
                    try:
                        tc["function"]["arguments"] = json.loads(a)
                    except json.JSONDecodeError:
                        tc["function"]["arguments"] = {}
                elif not isinstance(a, (dict, list)):
                    tc["function"]["arguments"] = {}
    return conv


def continue_final(text, conv):
    """transformers' apply_chat_template(continue_final_message=True): cut the rendered chat
    right after the final message's content."""
    final = conv[-1]["content"]
    if isinstance(final, (list, tuple)):
        for block in reversed(final):
            if "text" in block:
                final = block["text"]
                break
        else:
            raise ValueError("continue_final_message: no text in the final message")
    if final.strip() not in text:
        raise ValueError("continue_final_message: the final message is not in the rendered chat")
    at = text.rindex(final.strip())
    if text[at:at + len(final.lstrip())] == final:
        return text[:at + len(final.lstrip())]
    return text[:at + len(final.strip())]


class _OpenAIBaseModel(BaseModel):
    model_config = ConfigDict(extra="allow")  # as vLLM's OpenAIBaseModel: unknown keys are kept


class _FunctionDefinition(_OpenAIBaseModel):
    name: str
    description: Optional[str] = None
    parameters: Optional[dict[str, Any]] = None


class _ChatCompletionToolsParam(_OpenAIBaseModel):
    type: Literal["function"] = "function"
    function: _FunctionDefinition


def tool_dicts(tools):
    # vLLM: None if request.tools is None else [tool.model_dump() for tool in request.tools]
    # (pydantic keeps and dumps extra keys last); `tools: []` stays [].
    if tools is None:
        return None
    return [_ChatCompletionToolsParam.model_validate(t).model_dump() for t in tools]


def item_text(content):
    # Responses message content: a string or input_text/output_text/refusal parts joined by "\n".
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out = []
    for p in content:
        if p["type"] in ("input_text", "output_text", "text"):
            out.append(p["text"])
        elif p["type"] == "refusal":
            out.append(p["refusal"])
        else:
            raise ValueError("unsupported part %r" % p["type"])
    return "\n".join(out)


def responses_to_chat(case):
    """Responses items → chat messages: instructions first, developer → system, consecutive
    function calls (and calls right after an assistant message) in one assistant turn, reasoning
    attached to the next assistant turn and dropped if a non-assistant item comes first."""
    msgs = []
    if case.get("instructions"):
        msgs.append({"role": "system", "content": case["instructions"]})
    pending = []
    turn = None  # the assistant message calls may still join
    for it in case["input"]:
        kind = it.get("type", "message")
        if kind == "message":
            role = "system" if it["role"] == "developer" else it["role"]
            msg = {"role": role, "content": item_text(it.get("content"))}
            if role == "assistant":
                if pending:
                    msg["reasoning"] = "\n".join(pending)
                turn = msg
            else:
                turn = None
            pending = []
            msgs.append(msg)
        elif kind == "function_call":
            call = {"id": it["call_id"], "type": "function",
                    "function": {"name": it["name"], "arguments": it.get("arguments")}}
            if turn is not None and not pending:
                turn.setdefault("tool_calls", []).append(call)
            else:
                msg = {"role": "assistant", "content": None, "tool_calls": [call]}
                if pending:
                    msg["reasoning"] = "\n".join(pending)
                pending = []
                turn = msg
                msgs.append(msg)
        elif kind == "function_call_output":
            out = it["output"]
            msgs.append({"role": "tool", "tool_call_id": it["call_id"],
                         "content": out if isinstance(out, str) else item_text(out)})
            pending, turn = [], None
        elif kind == "reasoning":
            texts = [c["text"] for c in (it.get("content") or [])]
            if not texts:
                texts = [c["text"] for c in (it.get("summary") or [])]
            if texts:
                pending.append("\n".join(texts))
            turn = None
        else:
            raise ValueError("unsupported item %r" % kind)
    tools = []
    for t in case.get("tools") or []:
        group = t["tools"] if t["type"] == "namespace" else [t]
        for f in group:
            if f["type"] == "function":
                fn = {"name": f["name"]}
                for k in ("description", "parameters"):
                    if k in f:
                        fn[k] = f[k]
                tools.append({"type": "function", "function": fn})
    chat = {"name": case["name"], "messages": msgs, "add_generation_prompt": True}
    if tools:
        chat["tools"] = tools
    if "chat_template_kwargs" in case:
        chat["chat_template_kwargs"] = case["chat_template_kwargs"]
    return chat


def render_cases(template, fmt, specials, cases, responses=False):
    """Rendered results of cases (request dicts) as output lines."""
    lines = []
    for case in cases:
        if responses:
            case = responses_to_chat(case)
        kwargs = dict(specials)
        kwargs.update(case.get("chat_template_kwargs") or {})
        try:
            gen = case.get("add_generation_prompt", True)
            cont = case.get("continue_final_message", False)
            if gen and cont:
                raise ValueError("continue_final_message and add_generation_prompt are exclusive")
            conv = preprocess(case["messages"], fmt)
            text = template.render(messages=conv, tools=tool_dicts(case.get("tools")),
                                   documents=None, add_generation_prompt=gen, **kwargs)
            if cont:
                text = continue_final(text, conv)
            res = {"name": case["name"], "text": text}
        except Exception as e:  # noqa: BLE001 — the error is the expected result
            res = {"name": case["name"], "error": "%s: %s" % (type(e).__name__, e)}
        lines.append(json.dumps(res, ensure_ascii=True) + "\n")
    return lines


def read_cases(data):
    # Split on "\n" only: never splitlines(), U+2028 is not a line break here.
    return [json.loads(line) for line in data.split("\n") if line]


def load_template(template_file, config):
    if template_file in ("-", ""):
        return config["chat_template"]
    with open(template_file, encoding="utf-8", newline="") as f:
        return f.read()


def families(manifest_file, cases_file):
    """Renders cases_file with every template of the manifest; entries with "responses": true
    also render responses_cases.jsonl (next to the manifest) as responses-TEMPLATE.text.jsonl."""
    root = os.path.dirname(manifest_file)
    with open(os.path.join(root, "responses_cases.jsonl"), "rb") as f:
        responses_cases = read_cases(f.read().decode("utf-8"))
    with open(manifest_file, encoding="utf-8") as f:
        manifest = json.load(f)
    with open(cases_file, "rb") as f:
        cases = read_cases(f.read().decode("utf-8"))
    env = make_env()
    for entry in manifest:
        fam = os.path.join(root, entry["family"])
        with open(os.path.join(fam, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        source = load_template(entry["file"] and os.path.join(fam, entry["file"]), config)
        fmt = content_format(env, source)
        lines = render_cases(env.from_string(source), fmt, special_tokens_map(config), cases)
        base = os.path.join(fam, entry["template"])
        with open(base + ".text.jsonl", "w", encoding="ascii", newline="") as f:
            f.writelines(lines)
        with open(base + ".format", "w", encoding="ascii", newline="") as f:
            f.write(fmt + "\n")
        if entry.get("responses"):
            rlines = render_cases(env.from_string(source), fmt, special_tokens_map(config), responses_cases, True)
            with open(os.path.join(fam, "responses-" + entry["template"] + ".text.jsonl"), "w", encoding="ascii",
                      newline="") as f:
                f.writelines(rlines)
        ok = sum(1 for l in lines if '"text":' in l)
        sys.stderr.write("%s/%s: %s, %d rendered, %d errors\n" % (
            entry["family"], entry["template"], fmt, ok, len(lines) - ok))


def content_formats(path):
    """Recomputes the "openai" field of each {name, template} entry of path (rewritten in place)."""
    with open(path, encoding="utf-8") as f:
        cases = json.load(f)
    env = make_env()
    out = [{"name": c["name"], "template": c["template"], "openai": content_format(env, c["template"]) == "openai"}
           for c in cases]
    with open(path, "w", encoding="ascii", newline="") as f:
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=True) for c in out) + "\n]\n")


def main():
    if sys.argv[1] == "--content-formats":
        content_formats(sys.argv[2])
        return
    if sys.argv[1] == "--families":
        families(sys.argv[2], sys.argv[3])
        return
    name, template_file, config_file = sys.argv[1:4]
    responses = "--responses" in sys.argv[4:]
    with open(config_file, encoding="utf-8") as f:
        config = json.load(f)
    env = make_env()
    source = load_template(template_file, config)
    cases = read_cases(sys.stdin.buffer.read().decode("utf-8"))
    lines = render_cases(env.from_string(source), content_format(env, source), special_tokens_map(config),
                         cases, responses)
    sys.stdout.writelines(lines)


if __name__ == "__main__":
    main()
