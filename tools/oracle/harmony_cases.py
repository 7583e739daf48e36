"""Responses-shaped requests for the gpt-oss Harmony golden suite, and their Harmony messages.

Writes testdata/harmony/cases.json: for each case its request body (raw JSON text, so number
spellings and key order reach the oracle as a client sent them), the deployment options, and the
Harmony conversation vLLM builds for it. The conversation is built by `vllm_messages` below, a
line-by-line transcription of vLLM's gpt-oss Responses path (vllm/entrypoints/openai/responses/
serving.py `_construct_input_messages_with_harmony`, responses/harmony.py
`response_input_to_harmony`, parser/harmony_utils.py `build_harmony_preamble`,
`get_system_message`, `get_developer_message`, `extract_instructions_from_messages`,
`flatten_input_text_content`) producing openai_harmony's JSON message form. vLLM itself cannot run
here; harmony_render.mjs then renders each conversation with openai_harmony (the oracle).

Usage: python3 tools/oracle/harmony_cases.py testdata/harmony/cases.json
"""
import json
import sys

IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
BUILTIN = {"web_search_preview", "code_interpreter", "container"}
EFFORTS = {"low": "Low", "medium": "Medium", "high": "High"}


def text(t):
    return {"type": "text", "text": t}


def system_message(opts, effort=None, instructions=None):
    identity = IDENTITY
    if instructions is not None and opts.get("instructions_in_system"):
        identity = f"{identity}\n{instructions}" if identity else instructions
    sys_content = {
        "type": "system_content",
        "model_identity": identity,
        "reasoning_effort": EFFORTS[effort] if effort is not None else "Medium",
        "conversation_start_date": opts["start_date"],
        "knowledge_cutoff": "2024-06",
        "channel_config": {"valid_channels": ["analysis", "commentary", "final"], "channel_required": True},
        "tools": None,
    }
    return {"role": "system", "content": [sys_content]}


def developer_message(opts, instructions=None, tools=None):
    dev = {"type": "developer_content", "instructions": None, "tools": None}
    if instructions is not None and not opts.get("instructions_in_system"):
        dev["instructions"] = instructions
    if tools is not None:
        fn = []
        for t in tools:
            if t["type"] in BUILTIN:
                continue
            if t["type"] != "function":
                raise ValueError(f"tool type {t['type']} not supported")
            fn.append({"name": t["name"], "description": t.get("description") or "", "parameters": t.get("parameters")})
        if fn:
            dev["tools"] = {"functions": {"name": "functions", "description": None, "tools": fn}}
    return {"role": "developer", "content": [dev]}


def flatten(content):
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = []
    for item in content:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict) and item.get("text") is not None:
            texts.append(item["text"])
    return "".join(texts) if texts else None


def item_to_harmony(item, prev, opts):
    typ = item.get("type", "message")
    if typ == "message":
        role, content = item["role"], item["content"]
        if role in ("system", "developer"):
            t = flatten(content)
            if not t:
                return None
            if role == "system" and opts.get("instructions_in_system"):
                return system_message(opts, instructions=t)
            return developer_message(opts, instructions=t)
        if isinstance(content, str):
            msg = {"role": role, "content": [text(content)]}
        else:
            msg = {"role": role, "content": [text(c.get("text", "")) for c in content]}
        if role == "assistant":
            msg["channel"] = "final"
        return msg
    if typ == "function_call_output":
        call = next((p for p in reversed(prev) if p["call_id"] == item["call_id"]), None)
        if call is None:
            raise ValueError("No call message found")
        return {"role": "tool", "name": f"functions.{call['name']}", "recipient": "assistant",
                "channel": "commentary", "content": [text(item["output"])]}
    if typ == "reasoning":
        content = item.get("content")
        if content and len(content) >= 1:
            return {"role": "assistant", "channel": "analysis",
                    "content": [text("\n".join(c["text"] for c in content))]}
        return None
    if typ == "function_call":
        return {"role": "assistant", "channel": "commentary", "recipient": f"functions.{item['name']}",
                "content_type": "json", "content": [text(item["arguments"])]}
    raise ValueError(f"Unknown input type: {typ}")


def vllm_messages(req, opts):
    tools = req.get("tools") or []
    with_custom = not {t["type"] for t in tools}.issubset(BUILTIN)
    instructions = req.get("instructions")
    inp = req["input"]
    if instructions is None and isinstance(inp, list) and inp and inp[0].get("type", "message") == "message" \
            and inp[0].get("role") in ("system", "developer"):
        instructions, inp = flatten(inp[0].get("content")), inp[1:]
    effort = (req.get("reasoning") or {}).get("effort")
    dev_instr = sys_instr = None
    if opts.get("instructions_in_system"):
        sys_instr = instructions
    else:
        dev_instr = instructions
    tools_arg = tools if with_custom else None
    msgs = [system_message(opts, effort, sys_instr)]
    if dev_instr or tools_arg:
        msgs.append(developer_message(opts, dev_instr, tools_arg))
    if isinstance(inp, str):
        msgs.append({"role": "user", "content": [text(inp)]})
    else:
        prev = []
        for item in inp:
            m = item_to_harmony(item, prev, opts)
            if m is not None:
                msgs.append(m)
            if item.get("type") == "function_call":
                prev.append(item)
    return msgs


# ---------------------------------------------------------------------------------------------
# Cases

def user(t):
    return {"role": "user", "content": t}


def user_parts(*ts):
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t} for t in ts]}


def assistant(*ts):
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t, "annotations": []} for t in ts]}


def reasoning(*ts):
    return {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": t} for t in ts]}


def call(name, args, cid):
    return {"type": "function_call", "name": name, "arguments": args, "call_id": cid, "id": "fc_" + cid}


def output(cid, out):
    return {"type": "function_call_output", "call_id": cid, "output": out}


def fn(name, desc, params):
    t = {"type": "function", "name": name}
    if desc is not None:
        t["description"] = desc
    t["parameters"] = params
    return t


WEATHER = fn("get_weather", "Gets the current weather for a location.", {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
    },
    "required": ["location"],
})
SEARCH = fn("search", "Search the web.\nReturns the top results.", {
    "type": "object",
    "properties": {
        "query": {"type": "string", "title": "Query", "description": "What to search for", "examples": ["weather today", "news"]},
        "limit": {"type": "integer", "default": 10, "minimum": 1},
        "safe": {"type": "boolean", "default": True},
        "filters": {"type": "object", "description": "Optional filters", "properties": {
            "site": {"type": "string"},
            "after": {"type": ["string", "null"], "description": "ISO date"},
            "langs": {"type": "array", "items": {"type": "string", "enum": ["en", "de", "fr"]}},
        }},
    },
    "required": ["query"],
})
NOPARAMS = fn("get_time", "Returns the current time.", None)
EMPTY = fn("ping", None, {})

# Raw JSON tool arrays keep number spellings and key order exactly as written. No float with an
# integral value (1.0) and no integer-like property name appears: the wasm oracle receives values
# through JavaScript, which turns 1.0 into the integer 1 and orders integer-like keys first, while
# vLLM's path (Python json → serde_json) keeps both; render/harmony's unit tests cover those.
RAW_TOOLS = {
    "numbers": '[{"type":"function","name":"tune","description":"Tune numbers.","parameters":{"type":"object","properties":{'
               '"temperature":{"type":"number","default":0.70},"top_p":{"type":"number","default":0.95},'
               '"big":{"type":"integer","default":12345678901234567890123},"exp":{"type":"number","default":1e-7},'
               '"huge":{"type":"number","default":1E16},"neg":{"type":"number","default":-2.50},"z":{"type":"integer","default":-0},'
               '"small":{"type":"number","default":0.00001},"mid":{"type":"number","default":123456.789e-3}},"required":[]}}]',
    "defaults": '[{"type":"function","name":"configure","description":"Configure.","parameters":{"type":"object","properties":{'
                '"mode":{"type":"string","enum":["fast","slow"],"default":"fast"},"name":{"type":"string","default":"a \\"quoted\\" \\u00e9 name"},'
                '"tags":{"type":"array","items":{"type":"string"},"default":["x","y"]},"opts":{"type":"object","default":{"b":1,"a":[true,null]}},'
                '"ctl":{"type":"string","default":"tab\\tnl\\nend\\u0001"},"flag":{"type":"boolean","default":false},"none":{"type":"string","default":null}},"required":["mode"]}}]',
    "dupkeys": '[{"type":"function","name":"dup","description":"Duplicate keys.","parameters":{"type":"object","properties":{'
               '"a":{"type":"string"},"b":{"type":"number"},"a":{"type":"boolean","description":"later a"}},"required":["b"]}}]',
    "keyorder": '[{"type":"function","name":"order","parameters":{"required":["z"],"properties":{"z":{"type":"string"},"a":{"type":"string"},"m":{"description":"no type"}},"type":"object"},"description":"Key order."}]',
}

ONEOF = fn("pay", "Make a payment.", {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "description": "Amount"},
        "method": {"description": "Payment method", "oneOf": [
            {"type": "string", "enum": ["card", "cash"], "description": "Payment method"},
            {"type": "object", "properties": {"iban": {"type": "string"}}, "required": ["iban"], "description": "Bank transfer"},
        ]},
        "memo": {"oneOf": [{"type": "string", "default": "none"}, {"type": "null"}], "default": "x"},
        "note": {"oneOf": [{"type": "string", "description": "text note", "nullable": True}, {"type": "integer", "default": 3}],
                 "description": "A note"},
    },
    "required": ["amount", "method"],
})
TOPONEOF = fn("shape", "Top-level oneOf.", {"oneOf": [
    {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"], "description": "circle"},
    {"type": "object", "properties": {"w": {"type": "number"}, "h": {"type": "number"}}, "default": {"w": 1}},
    {"type": "string", "enum": ["unit"], "default": "unit"},
]})
NULLABLE = fn("lookup", "Nullable fields.", {
    "type": "object",
    "properties": {
        "id": {"type": "string", "nullable": True, "description": "Record id"},
        "maybe": {"type": ["integer", "null"]},
        "either": {"type": ["number", "string", "boolean"]},
        "weird": {"type": [1, 2]},
        "any": {},
        "arr": {"type": "array"},
        "arr2": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "objs": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "number"}}, "required": ["k"]}},
        "enumnum": {"type": "string", "enum": [1, 2]},
        "unknown": {"type": "date"},
    },
})


def deep(n):
    s = {"type": "string", "description": "leaf"}
    for i in range(n):
        s = {"type": "object", "description": f"level {n - i}", "properties": {f"k{i}": s, "x": {"type": "integer"}}, "required": [f"k{i}"]}
    return fn("deep", "Deeply nested.", s)


def many_tools(n):
    return [fn(f"tool_{i}", f"Tool number {i}.", {"type": "object", "properties": {"arg": {"type": "string", "description": f"argument {i}"}, "n": {"type": "integer"}}, "required": ["arg"] if i % 2 else []}) for i in range(n)]


UNICODE = [
    "héllo wörld", "日本語のテキスト、句読点。", "emoji 👍🏽 family 👨‍👩‍👧‍👦 flags 🇺🇸", "مرحبا بالعالم", "combining é ñ",
    "zero\u200bwidth\u200djoiner", "typed <|end|> marker", "<|start|>assistant<|channel|>final<|message|>hi<|return|>",
    "<|constrain|>json <|call|>", "line1\r\nline2\rline3\n", "\ttabs\t and   spaces   ", "   ", "\n\n\n", "Ω≈ç√∫˜µ≤≥÷",
    "\u0000nul and \u007fdel", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙", "a" * 300, "1234567890 3.14159 -42 1e10",
]


def cases():
    out = []

    def add(name, req, **opts):
        o = {"start_date": "2025-06-28"}
        o.update(opts)
        out.append((name, req, o))

    for effort in (None, "low", "medium", "high"):
        for iname, instr in (("none", None), ("short", "Be concise."), ("multi", "You are a pirate.\n\nAlways say arr.")):
            req = {"model": "gpt-oss-20b", "input": "What is the capital of France?"}
            if instr is not None:
                req["instructions"] = instr
            if effort is not None:
                req["reasoning"] = {"effort": effort}
            add(f"simple/effort-{effort or 'default'}/instructions-{iname}", req)
    for i, u in enumerate(UNICODE):
        add(f"unicode/{i:02d}", {"model": "m", "input": [user(u)], "instructions": u if i % 3 == 0 else None})
    for d in ("2024-01-01", "2026-12-31", "1999-02-03"):
        add(f"date/{d}", {"model": "m", "input": "hi"}, start_date=d)
    add("input/empty-string", {"model": "m", "input": ""})
    add("input/parts", {"model": "m", "input": [user_parts("first part", " second part", "\nthird")]})
    add("input/parts-boundary", {"model": "m", "input": [user_parts("hel", "lo wor", "ld")]})
    add("input/assistant-parts", {"model": "m", "input": [user("hi"), assistant("Hello", " there!"), user("again")]})
    add("input/refusal", {"model": "m", "input": [user("bad"), {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]}, user("ok")]})
    add("input/assistant-empty", {"model": "m", "input": [user("hi"), assistant(), user("again")]})
    add("instructions/empty", {"model": "m", "instructions": "", "input": "hi"})
    add("instructions/empty-with-tools", {"model": "m", "instructions": "", "input": "hi", "tools": [WEATHER]})
    add("instructions/peel-system", {"model": "m", "input": [{"role": "system", "content": "You are terse."}, user("hi")]})
    add("instructions/peel-developer-parts", {"model": "m", "input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Rule one."}, {"type": "input_text", "text": " Rule two."}]}, user("hi")]})
    add("instructions/peel-empty", {"model": "m", "input": [{"role": "developer", "content": []}, user("hi")]})
    add("instructions/not-peeled", {"model": "m", "instructions": "Top.", "input": [{"role": "system", "content": "Inner system."}, user("hi")]})
    add("instructions/mid-developer", {"model": "m", "input": [user("hi"), assistant("Hello."), {"role": "developer", "content": "Now be formal."}, user("again")]})
    add("instructions/mid-empty-system", {"model": "m", "input": [user("hi"), {"role": "system", "content": ""}, user("again")]})
    add("system-mode/instructions", {"model": "m", "instructions": "Speak French.", "input": "hi"}, instructions_in_system=True)
    add("system-mode/instructions-tools", {"model": "m", "instructions": "Speak French.", "input": "weather?", "tools": [WEATHER], "reasoning": {"effort": "high"}}, instructions_in_system=True)
    add("system-mode/peel", {"model": "m", "input": [{"role": "system", "content": "From system item."}, user("hi")]}, instructions_in_system=True)
    add("system-mode/mid-system", {"model": "m", "input": [user("hi"), {"role": "system", "content": "Mid system."}, user("again")]}, instructions_in_system=True)
    add("system-mode/mid-developer", {"model": "m", "input": [user("hi"), {"role": "developer", "content": "Mid developer."}, user("again")]}, instructions_in_system=True)

    tool_sets = {
        "weather": [WEATHER], "search": [SEARCH], "noparams": [NOPARAMS], "empty": [EMPTY], "oneof": [ONEOF],
        "toponeof": [TOPONEOF], "nullable": [NULLABLE], "deep3": [deep(3)], "deep8": [deep(8)],
        "many5": many_tools(5), "many24": many_tools(24), "mixed": [WEATHER, SEARCH, NOPARAMS, ONEOF],
        "with-builtin": [{"type": "web_search_preview"}, WEATHER], "only-builtin": [{"type": "web_search_preview"}],
        "unicode-desc": [fn("übersetze", "Übersetzt Text ins Deutsche 🇩🇪.\r\nZweite Zeile.\n", {"type": "object", "properties": {"text": {"type": "string", "description": "Der Text — bitte «vollständig»"}}, "required": ["text"]})],
        "desc-null": [fn("nodesc", None, {"type": "object", "properties": {"a": {"type": "string"}}})],
        "desc-blank-lines": [fn("blank", "first\n\nthird\n\n", {"type": "object", "properties": {}})],
        "params-not-object": [fn("odd", "Odd schema.", {"type": "string", "enum": ["a", "b"]})],
    }
    for tname, tools in tool_sets.items():
        add(f"tools/{tname}", {"model": "m", "input": "Use a tool if needed.", "tools": tools, "instructions": "Be helpful." if len(tname) % 2 else None})
    for tname, raw in RAW_TOOLS.items():
        add(f"tools-raw/{tname}", {"model": "m", "input": "go", "tools": f"@RAW:{tname}"})

    w = [WEATHER]
    add("loop/one-call", {"model": "m", "tools": w, "input": [user("Weather in Paris?"), call("get_weather", '{"location":"Paris"}', "c1")]})
    add("loop/call-output", {"model": "m", "tools": w, "input": [user("Weather in Paris?"), reasoning("Need weather; call tool."), call("get_weather", '{"location":"Paris"}', "c1"), output("c1", '{"temp":21,"unit":"celsius"}')]})
    add("loop/call-output-final", {"model": "m", "tools": w, "input": [user("Weather in Paris?"), reasoning("Need weather; call tool."), call("get_weather", '{"location":"Paris"}', "c1"), output("c1", '{"temp":21}'), reasoning("It is 21C."), assistant("It is 21°C in Paris.")]})
    add("loop/final-then-user", {"model": "m", "tools": w, "input": [user("Weather in Paris?"), reasoning("Need weather; call tool."), call("get_weather", '{"location":"Paris"}', "c1"), output("c1", '{"temp":21}'), reasoning("It is 21C."), assistant("It is 21°C in Paris."), user("And in Rome?")]})
    add("loop/final-then-user-reasoning-call", {"model": "m", "tools": w, "input": [user("Weather in Paris?"), reasoning("r1"), call("get_weather", '{"location":"Paris"}', "c1"), output("c1", "21"), reasoning("r2"), assistant("21°C."), user("And in Rome?"), reasoning("r3 for rome"), call("get_weather", '{"location":"Rome"}', "c2"), output("c2", "25")]})
    add("loop/two-turns-final", {"model": "m", "input": [user("hi"), reasoning("greet"), assistant("Hello!"), user("how are you"), reasoning("answer"), assistant("Fine.")]})
    add("loop/two-turns-final-user", {"model": "m", "input": [user("hi"), reasoning("greet"), assistant("Hello!"), user("how are you"), reasoning("answer"), assistant("Fine."), user("bye")]})
    add("loop/keep-between-finals", {"model": "m", "input": [user("a"), reasoning("ra"), assistant("A"), user("b"), reasoning("rb"), assistant("B"), user("c"), reasoning("rc"), assistant("C"), user("d")]})
    add("loop/reasoning-only-last", {"model": "m", "input": [user("a"), assistant("A"), user("b"), reasoning("thinking about b")]})
    add("loop/parallel-2", {"model": "m", "tools": w, "input": [user("Paris and Rome?"), reasoning("two calls"), call("get_weather", '{"location":"Paris"}', "c1"), call("get_weather", '{"location":"Rome"}', "c2"), output("c1", "21"), output("c2", "25")]})
    add("loop/parallel-3-final", {"model": "m", "tools": [WEATHER, SEARCH], "input": [user("Paris, Rome, news?"), call("get_weather", '{"location":"Paris"}', "c1"), call("get_weather", '{"location":"Rome"}', "c2"), call("search", '{"query":"news"}', "c3"), output("c3", "headline"), output("c1", "21"), output("c2", "25"), assistant("Done.")]})
    add("loop/three-rounds", {"model": "m", "tools": [WEATHER, SEARCH], "reasoning": {"effort": "low"}, "instructions": "Use tools.", "input": [
        user("Plan a trip"), reasoning("search first"), call("search", '{"query":"trips"}', "a"), output("a", "Paris"),
        reasoning("weather next"), call("get_weather", '{"location":"Paris"}', "b"), output("b", "sunny"),
        reasoning("another search"), call("search", '{"query":"hotels paris","limit":3}', "c"), output("c", "Hotel X")]})
    add("loop/preamble-assistant-then-call", {"model": "m", "tools": w, "input": [user("weather?"), assistant("Let me check."), call("get_weather", '{"location":"Oslo"}', "c1"), output("c1", "cold")]})
    add("loop/dup-call-id-latest-wins", {"model": "m", "tools": [WEATHER, SEARCH], "input": [user("x"), call("get_weather", "{}", "same"), output("same", "1"), call("search", '{"query":"q"}', "same"), output("same", "2")]})
    add("loop/args-unicode-and-markers", {"model": "m", "tools": w, "input": [user("x"), call("get_weather", '{"location":"Zürich <|end|> \\u00fc"}', "c1"), output("c1", "<|return|> ok ✓")]})
    add("loop/args-pretty", {"model": "m", "tools": w, "input": [user("x"), call("get_weather", '{\n  "location": "Paris",\n  "unit": "celsius"\n}', "c1"), output("c1", "")]})
    add("loop/output-empty-args", {"model": "m", "tools": [NOPARAMS], "input": [user("time?"), call("get_time", "", "t"), output("t", "12:00")]})
    add("loop/reasoning-multi-content", {"model": "m", "input": [user("q"), reasoning("part one", "part two", ""), assistant("A")]})
    add("loop/reasoning-empty-content", {"model": "m", "input": [user("q"), {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "sum"}], "content": []}, assistant("A"), user("q2")]})
    add("loop/reasoning-no-content", {"model": "m", "input": [user("q"), {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "sum"}]}, user("q2")]})
    add("loop/final-only-history", {"model": "m", "input": [user("q"), assistant("A"), user("q2"), assistant("B"), user("q3")]})
    add("loop/analysis-after-first-final", {"model": "m", "input": [user("q"), assistant("A"), reasoning("later thought"), assistant("B")]})
    add("loop/analysis-no-final", {"model": "m", "tools": w, "input": [user("q"), reasoning("one"), reasoning("two"), call("get_weather", "{}", "c"), output("c", "x"), reasoning("three")]})
    for effort in ("low", "high"):
        add(f"loop/effort-{effort}-tools", {"model": "m", "tools": [SEARCH, WEATHER], "reasoning": {"effort": effort}, "input": [user("news + weather"), reasoning("go"), call("search", '{"query":"news"}', "n"), output("n", "all quiet")]})
    long_conv = [user("start")]
    for i in range(12):
        long_conv += [reasoning(f"thought {i}"), call("get_weather", json.dumps({"location": f"city{i}"}), f"k{i}"), output(f"k{i}", f"{i * 3}C")]
        if i % 4 == 3:
            long_conv += [assistant(f"summary {i}"), user(f"continue {i}")]
    add("loop/long-agent", {"model": "m", "tools": [WEATHER, SEARCH, NOPARAMS], "instructions": "You are an agent.", "input": long_conv})
    add("loop/unicode-agent", {"model": "m", "tools": tool_sets["unicode-desc"], "input": [user("Übersetze: hello 👋"), reasoning("Übersetzung nötig"), call("übersetze", '{"text":"hello 👋"}', "u"), output("u", "hallo 👋"), assistant("hallo 👋"), user("danke")]})
    return out


def main(dst):
    records = []
    for name, req, opts in cases():
        if "instructions" in req and req["instructions"] is None:
            req = {k: v for k, v in req.items() if k != "instructions"}
        body = json.dumps(req, ensure_ascii=False)
        if isinstance(req.get("tools"), str) and req["tools"].startswith("@RAW:"):
            raw = RAW_TOOLS[req["tools"][5:]]
            body = body.replace(json.dumps(req["tools"]), raw)
        records.append({"name": name, "options": opts, "request": body, "messages": vllm_messages(json.loads(body), opts)})
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(records, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(records)} cases")


if __name__ == "__main__":
    main(sys.argv[1])
