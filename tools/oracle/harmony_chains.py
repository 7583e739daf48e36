"""gpt-oss previous_response_id chains for the Harmony golden suite, and the messages vLLM holds.

Writes testdata/harmony/chains.json: chains of Responses turns, each with its request, the output
the model generates (Harmony text after the prompt's "<|start|>assistant", and the stop id), and
the Harmony conversation vLLM renders for the turn's prompt. vLLM continues a stored gpt-oss
response from its message store, not from the response's output items; `msg_store_prompt` below
transcribes that path line by line:

- vllm/entrypoints/openai/responses/serving.py `_construct_input_messages_with_harmony`: a new
  conversation is the system/developer preamble plus the input items (harmony_cases.vllm_messages);
  a continuation is `self.msg_store[prev_response.id]` (the earlier prompt's messages plus the
  messages parsed from its output) followed by the new input, each item mapped by
  `response_input_to_harmony(item, prev_outputs)` where prev_outputs is the previous response's
  output plus the input's own calls, system messages skipped (`new_msg.author.role != "system"`).
  The request's instructions, tools and effort are not read again (its FIXME): the stored
  system and developer messages of the chain's first turn stay. The slice-delete-reappend of the
  turn after the last final re-appends every message (the FIXME says so: a no-op), so analysis
  goes only where render_for_completion's auto_drop_analysis drops it.
- `_create_responses`: `self.msg_store[request.request_id] = messages`, the list HarmonyContext
  extends with `parser.messages` (responses/context.py `append_output`): the messages
  openai_harmony's StreamableParser finished, with the channel, recipient and content type as
  generated (`<|constrain|>json` stays; a preamble stays on commentary); a message the output
  stopped inside is not among them.
- the output items (responses/harmony.py `harmony_to_response_output`): analysis → reasoning,
  commentary or final without a recipient → message, functions.NAME → function_call; a stateless
  replay sends them back as input items, mapped by response_input_to_harmony (a preamble then
  comes back on final, a call with content type json).

vLLM itself cannot run here; harmony_render.mjs renders each turn's conversation with
openai_harmony (the oracle).

Usage: python3 tools/oracle/harmony_chains.py testdata/harmony/chains.json
"""
import copy
import json
import sys

from harmony_cases import item_to_harmony, text, vllm_messages

START, END, CALL, RETURN, MESSAGE = "<|start|>", "<|end|>", "<|call|>", "<|return|>", "<|message|>"


def parse_header(h):
    """openai_harmony's parse_header_from_string for an assistant header (role known or first)."""
    channel = None
    i = h.find("<|channel|>")
    if i >= 0:
        after = h[i + len("<|channel|>"):]
        end = next((k for k, c in enumerate(after) if c.isspace() or c == "<"), len(after))
        channel = after[:end]
        h = h[:i] + after[end:]
    h = h.strip()
    if "<|constrain|>" in h:
        h = h.replace("<|constrain|>", " <|constrain|>").strip()
    parts = h.split()
    if parts and parts[0] == "assistant":
        parts.pop(0)
    recipient = content_type = None
    if parts:
        n, last = len(parts), parts.pop()
        if last.startswith("to="):
            recipient = last[3:]
        elif n == 1:
            recipient = last
        else:
            content_type = last
            r = parts.pop()
            recipient = r[3:] if r.startswith("to=") else r
    assert not parts, h
    return channel, recipient, content_type


def parse_output(generated):
    """The messages StreamableParser finishes over the output, and the unfinished one (or None)."""
    msgs, pos, first = [], 0, True
    while pos < len(generated):
        if not first:
            assert generated.startswith(START, pos), generated[pos:]
            pos += len(START)
        first = False
        m = generated.index(MESSAGE, pos)
        channel, recipient, content_type = parse_header(generated[pos:m])
        body = m + len(MESSAGE)
        ends = [(generated.find(t, body), t) for t in (END, CALL, RETURN)]
        ends = [e for e in ends if e[0] >= 0]
        msg = {"role": "assistant", "content": [text(generated[body:min(ends)[0]] if ends else generated[body:])]}
        if channel:
            msg["channel"] = channel
        if recipient:
            msg["recipient"] = recipient
        if content_type:
            msg["content_type"] = content_type
        if not ends:
            return msgs, msg
        msgs.append(msg)
        pos = min(ends)[0] + len(min(ends)[1])
    return msgs, None


def output_items(msgs, calls):
    """harmony_to_response_output for each message; calls numbers the function calls (@1, @2, …)."""
    items = []
    for m in msgs:
        t = m["content"][0]["text"]
        r = m.get("recipient")
        if r:
            calls.append(None)
            name = r[len("functions."):] if r.startswith("functions.") else r
            items.append({"type": "function_call", "name": name, "arguments": t, "call_id": f"@{len(calls)}"})
        elif m.get("channel") == "analysis":
            items.append({"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": t}]})
        else:
            items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t, "annotations": []}]})
    return items


def msg_store_prompt(req, opts, prev):
    """The messages of the turn's prompt: _construct_input_messages_with_harmony."""
    if prev is None:
        return vllm_messages(req, opts)
    messages = copy.deepcopy(prev["messages"])
    inp = req["input"]
    if isinstance(inp, str):
        messages.append({"role": "user", "content": [text(inp)]})
        return messages
    prev_outputs = [it for it in prev["output"] if it["type"] == "function_call"]
    for item in inp:
        m = item_to_harmony(item, prev_outputs, opts)
        if m is not None and m["role"] != "system":
            messages.append(m)
        if item.get("type") == "function_call":
            prev_outputs.append(item)
    return messages


# ---------------------------------------------------------------------------------------------
# Chains

WEATHER = [{"type": "function", "name": "get_weather", "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
           {"type": "function", "name": "get_time", "description": "Local time.",
            "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}]


def user(t):
    return {"role": "user", "content": t}


def out(cid, o):
    return {"type": "function_call_output", "call_id": cid, "output": o}


def a(t):
    return f"<|channel|>analysis<|message|>{t}<|end|>{START}assistant"


def pre(t):
    return f"<|channel|>commentary<|message|>{t}<|end|>{START}assistant"


def call(name, args, ct=" <|constrain|>json"):
    return f"<|channel|>commentary to=functions.{name}{ct}<|message|>{args}", CALL


def final(t):
    return f"<|channel|>final<|message|>{t}", RETURN


def turn(inp, gen, continues=True, replay=False, **req):
    """A turn: its input, what the model generates, how it continues; req overrides the chain's
    request fields for this turn (None removes one)."""
    body, stop = gen
    return {"input": inp, "generated": body, "stop": stop, "continues": continues, "replay": replay, "req": req}


def chains():
    out_ = []

    def add(name, base, turns, **opts):
        o = {"start_date": "2025-06-28"}
        o.update(opts)
        out_.append((name, base, turns, o))

    tools = {"model": "m", "tools": WEATHER}
    add("tool-round", tools, [
        turn([user("Weather in Paris?")], (a("Need the weather tool.") + call("get_weather", '{"city":"Paris"}')[0], CALL), continues=False),
        turn([out("@1", '{"temp":21}')], (a("It is 21C.") + final("21°C and sunny in Paris.")[0], RETURN)),
        turn([user("And in Rome?")], (a("Call again.") + call("get_weather", '{"city":"Rome"}')[0], CALL)),
        turn([out("@2", '{"temp":25}')], final("25°C in Rome.")),
        turn("Thanks!", final("You're welcome.")),
    ])
    add("preamble", {**tools, "instructions": "Tell the user what you are about to do."}, [
        turn([user("What time is it in Tokyo?")], (a("Use get_time.") + pre("Let me check the time in Tokyo.") + call("get_time", '{"tz":"Asia/Tokyo"}')[0], CALL), continues=False),
        turn([out("@1", "09:14")], (a("Answer.") + final("It is 09:14 in Tokyo.")[0], RETURN)),
        turn([user("And the weather there?")], (pre("Checking the weather.") + call("get_weather", '{"city":"Tokyo"}')[0], CALL)),
        turn([out("@2", "rain")], (a("Rainy.") + final("It is raining in Tokyo.")[0], RETURN)),
    ])
    add("several-finals", {"model": "m", "reasoning": {"effort": "high"}}, [
        turn("Name a prime.", (a("2 is prime.") + final("2")[0], RETURN), continues=False),
        turn("Another one.", (a("3 is prime too.") + final("3")[0], RETURN)),
        turn("And one more.", (a("5.") + final("5")[0], RETURN)),
        turn([user("Sum them.")], (a("2+3+5=10.") + final("10")[0], RETURN)),
    ])
    add("analysis-in-tool-loop", tools, [
        turn([user("Compare Paris and Oslo weather.")], (a("First Paris.") + call("get_weather", '{"city":"Paris"}')[0], CALL), continues=False),
        turn([out("@1", "sunny")], (a("Now Oslo.") + call("get_weather", '{"city":"Oslo"}')[0], CALL)),
        turn([out("@2", "snow")], (a("Paris sunny, Oslo snow.") + final("Paris is sunny; Oslo has snow.")[0], RETURN)),
        turn([user("And the time in Oslo?")], (a("get_time.") + call("get_time", '{"tz":"Europe/Oslo"}')[0], CALL)),
        turn([out("@3", "18:00")], final("18:00 in Oslo.")),
    ])
    add("content-types", tools, [
        turn([user("Weather in Lima?")], call("get_weather", '{"city":"Lima"}', ct=" json"), continues=False),
        turn([out("@1", "fog")], (call("get_weather", '{"city":"Cusco"}', ct="")[0], CALL)),
        turn([out("@2", "clear")], (f"<|channel|>commentary to=get_time <|constrain|>json<|message|>{{\"tz\":\"America/Lima\"}}", CALL)),
        turn([out("@3", "07:00")], final("Lima: fog; Cusco: clear; it is 07:00.")),
    ])
    add("stateless-replay-then-previous", tools, [
        turn([user("Weather in Madrid?")], (a("Tool.") + pre("Looking it up.") + call("get_weather", '{"city":"Madrid"}')[0], CALL), continues=False),
        turn([out("@1", "hot")], (a("Hot.") + final("It is hot in Madrid.")[0], RETURN), replay=True),
        turn([user("And Bilbao?")], (a("Tool again.") + call("get_weather", '{"city":"Bilbao"}')[0], CALL)),
        turn([out("@2", "mild")], (a("Mild.") + final("Mild in Bilbao.")[0], RETURN)),
        turn([user("Which is warmer?")], final("Madrid.")),
    ])
    add("cut-output", {"model": "m"}, [
        turn("Write a haiku.", (a("Five seven five.") + "<|channel|>final<|message|>Autumn moonlight—", None), continues=False),
        turn("Go on.", (a("Finish it.") + final("a worm digs silently\ninto the chestnut.")[0], RETURN)),
        turn("Another.", final("Old pond, frog jumps in.")),
    ])
    add("instructions-in-system", {**tools, "instructions": "Answer in French.", "reasoning": {"effort": "low"}}, [
        turn([user("Weather in Nice?")], (a("Outil.") + call("get_weather", '{"city":"Nice"}')[0], CALL), continues=False),
        turn([out("@1", "beau")], (a("Beau.") + final("Il fait beau à Nice.")[0], RETURN)),
        turn([{"role": "system", "content": "Be brief."}, user("Et Lyon ?")], (pre("Je regarde.") + call("get_weather", '{"city":"Lyon"}')[0], CALL)),
        turn([out("@2", "gris")], final("Gris.")),
    ], instructions_in_system=True)
    add("developer-mid-chain", {**tools, "instructions": "Be helpful."}, [
        turn([user("Time in Cairo?")], (a("Tool.") + call("get_time", '{"tz":"Africa/Cairo"}')[0], CALL), continues=False),
        turn([out("@1", "12:00")], final("Noon in Cairo.")),
        turn([{"role": "developer", "content": "Answer in one word."}, user("Weather there?")], (a("Tool.") + call("get_weather", '{"city":"Cairo"}')[0], CALL)),
        turn([out("@2", "sunny")], (a("One word.") + final("Sunny.")[0], RETURN)),
    ])
    add("params-change-mid-chain", {**tools, "instructions": "Always answer in English.", "reasoning": {"effort": "high"}}, [
        turn([user("Weather in Berlin?")], (a("Tool.") + call("get_weather", '{"city":"Berlin"}')[0], CALL), continues=False),
        turn([out("@1", "cloudy")], (a("Cloudy.") + final("Cloudy in Berlin.")[0], RETURN), instructions=None, reasoning=None),
        turn("And the time?", (a("get_time.") + call("get_time", '{"tz":"Europe/Berlin"}')[0], CALL), instructions="Réponds en français.", reasoning={"effort": "low"}),
        turn([out("@2", "10:00")], final("Il est 10:00."), tools=None),
        turn("Danke.", (a("New tools?") + final("Bitte.")[0], RETURN), tools=[WEATHER[1]], reasoning={"effort": "medium"}),
    ])
    add("unicode-args", tools, [
        turn([user("Wetter in São Paulo? 🌦")], (a("Werkzeug: São Paulo.") + pre("Einen Moment … 🌦") + call("get_weather", '{"city":"São Paulo ✓"}')[0], CALL), continues=False),
        turn([out("@1", "régen ☔")], (a("Regen.") + final("Es regnet in São Paulo ☔.")[0], RETURN)),
        turn("Danke 🙏", final("Gern geschehen!")),
    ])
    return out_


def main(dst):
    records = []
    for name, base, turns, opts in chains():
        history = []  # the conversation's items so far, as a stateless client holds them
        prev = None   # the previous response: its stored messages and output items
        calls = []
        recs = []
        for i, t in enumerate(turns):
            req = dict(base)
            for k, v in t["req"].items():
                if v is None:
                    req.pop(k, None)
                else:
                    req[k] = v
            inp = t["input"]
            if t["replay"]:
                req["input"] = history + (inp if isinstance(inp, list) else [user(inp)])
                stored = None
            else:
                req["input"] = inp
                stored = prev if t["continues"] else None
            if stored is None and i > 0 and not t["replay"]:
                raise ValueError(f"{name}: turn {i} neither continues nor replays")
            msgs = msg_store_prompt(req, opts, stored)
            done, unfinished = parse_output(t["generated"] + (t["stop"] or ""))
            items = output_items(done + ([unfinished] if unfinished else []), calls)
            history = (history if stored is not None or i == 0 else []) + (req["input"] if t["replay"] else (inp if isinstance(inp, list) else [user(inp)])) + items
            recs.append({"request": req, "previous": bool(stored), "generated": t["generated"], "stop": t["stop"], "messages": msgs})
            prev = {"messages": msgs + done, "output": items}
        records.append({"name": name, "options": opts, "turns": recs})
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(records, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(records)} chains, {sum(len(r['turns']) for r in records)} turns")


if __name__ == "__main__":
    main(sys.argv[1])
