#!/usr/bin/env python3
"""Reference prompt texts for the render golden suite: vLLM's chat preprocessing + Jinja2 as
transformers configures it. Independent of stitch's Go code on purpose: it is the oracle.

Usage: python3 tools/oracle/render_oracle.py TEMPLATE_NAME TEMPLATE_FILE TOKENIZER_CONFIG [--responses] \\
           < testdata/render/cases.jsonl > testdata/render/TEMPLATE_NAME.text.jsonl

With --responses the input lines are Responses requests {"name","instructions"?,"input","tools"?,
"chat_template_kwargs"?} (responses_cases.jsonl): they are first mapped to chat messages the way
stitch documents it (render.FromResponses), reimplemented here independently, and always rendered
with add_generation_prompt=True.

TEMPLATE_FILE is a .jinja file, or "-" to use tokenizer_config.json's chat_template.
Each output line is {"name", "text"} or {"name", "error"} (ensure_ascii, so no raw U+2028).
"""
import json
import sys
from datetime import datetime

from typing import Any, Literal, Optional

import jinja2
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


def make_env():
    # transformers' _compile_jinja_template setup.
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime(2026, 1, 2, 3, 4, 5).strftime(fmt)  # fixed: goldens must not depend on the clock

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def part_text(part):
    # vLLM's string content format: text-like parts give their text; text/refusal without it are skipped.
    if isinstance(part, str):
        return part
    t = part.get("type")
    if t in ("text", "input_text", "output_text"):
        return part.get("text")
    if t == "refusal":
        return part.get("refusal")
    if t == "thinking":
        return part.get("thinking")
    raise ValueError("unsupported part type %r" % t)


def preprocess(messages):
    """vLLM chat_utils.parse_chat_messages + _postprocess_messages, string content format."""
    conv = []
    for m in messages:
        role = m["role"]
        content = m.get("content")
        if content is None:
            texts = []
        elif isinstance(content, str):
            texts = [content]
        else:
            texts = [t for t in (part_text(p) for p in content) if t is not None]
        msg = {"role": role, "content": "\n".join(texts)}
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
        if isinstance(m.get("name"), str):
            msg["name"] = m["name"]
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
    # vLLM: [tool.model_dump() for tool in request.tools] (pydantic keeps and dumps extra keys last).
    if not tools:
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


def main():
    name, template_file, config_file = sys.argv[1:4]
    responses = "--responses" in sys.argv[4:]
    with open(config_file, encoding="utf-8") as f:
        config = json.load(f)
    if template_file == "-":
        source = config["chat_template"]
    else:
        with open(template_file, encoding="utf-8", newline="") as f:
            source = f.read()
    template = make_env().from_string(source)
    specials = special_tokens_map(config)
    data = sys.stdin.buffer.read().decode("utf-8")
    for line in data.split("\n"):  # never splitlines(): U+2028 is not a line break here
        if not line:
            continue
        case = json.loads(line)
        if responses:
            case = responses_to_chat(case)
        kwargs = dict(specials)
        kwargs.update(case.get("chat_template_kwargs") or {})
        try:
            text = template.render(messages=preprocess(case["messages"]), tools=tool_dicts(case.get("tools")),
                                   documents=None, add_generation_prompt=case.get("add_generation_prompt", True),
                                   **kwargs)
            res = {"name": case["name"], "text": text}
        except Exception as e:  # noqa: BLE001 — the error is the expected result
            res = {"name": case["name"], "error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(res, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()
