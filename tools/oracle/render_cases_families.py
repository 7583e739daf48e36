#!/usr/bin/env python3
"""Writes testdata/render/family_cases.jsonl: chat requests every family's chat template renders
in the family golden suite (testdata/render/families.json).

The cases are written so that the strictest templates accept most of them: user/assistant turns
alternate, tool call ids are 9 alphanumeric characters (Mistral), most turns carry one call
(Llama 3.x refuses several). Each template still rejects some (Gemma 3 without tools has no tool
role, Kimi K2's tool path needs list.append, which the sandbox forbids); the oracle records those
errors and the Go test expects an error there too.

Usage: python3 tools/oracle/render_cases_families.py > testdata/render/family_cases.jsonl
"""
import json
import random
import sys

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web <b>&</b> return \"snippets\".",
    "parameters": {"type": "object",
                   "properties": {"q": {"type": "string"}, "k": {"type": "integer", "default": 5},
                                  "ratio": {"type": "number", "default": 0.0}},
                   "required": ["q"]}}}
UNICODE = {"type": "function", "function": {
    "name": "traduire", "description": "Übersetzen — 翻訳",
    "parameters": {"type": "object", "properties": {"texte": {"type": "string"}}}}}
TOOLS = [WEATHER, SEARCH]

SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "What's the weather in Paris?"}
A1 = {"role": "assistant", "content": "It is sunny in Paris."}
U2 = {"role": "user", "content": "And in Tokyo?"}


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def calling(content, *calls):
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def result(cid, content, name=None):
    m = {"role": "tool", "tool_call_id": cid, "content": content}
    if name:
        m["name"] = name
    return m


def out(name, messages, gen=True, **extra):
    case = {"name": name, "messages": messages, "add_generation_prompt": gen}
    case.update(extra)
    sys.stdout.write(json.dumps(case, ensure_ascii=True) + "\n")


def main():
    # Plain conversations, generation prompt on and off.
    out("user_only", [U1])
    out("user_only_nogen", [U1], gen=False)
    out("system_user", [SYS, U1])
    out("system_user_nogen", [SYS, U1], gen=False)
    out("multi_turn", [SYS, U1, A1, U2])
    out("multi_turn_nogen", [SYS, U1, A1, U2], gen=False)
    out("multi_turn_no_system", [U1, A1, U2])
    out("ends_with_assistant_nogen", [SYS, U1, A1], gen=False)
    out("empty_user", [{"role": "user", "content": ""}])
    out("empty_system", [{"role": "system", "content": ""}, U1])
    out("long_history", [SYS] + [m for i in range(4) for m in (
        {"role": "user", "content": "Question %d?" % i},
        {"role": "assistant", "content": "Answer %d." % i})] + [U2])

    # Content given as parts: joined with "\n" (string format) or kept as parts (openai format);
    # falsy parts vanish from the string format only.
    out("parts_text", [{"role": "user", "content": [
        {"type": "text", "text": "first"}, {"type": "text", "text": "second"}]}])
    out("parts_empty_middle", [{"role": "user", "content": [
        {"type": "text", "text": "a"}, {"type": "text", "text": ""}, {"type": "text", "text": "b"}]}])
    out("parts_strings", [{"role": "user", "content": ["a", "", "b"]}])
    out("parts_only_empty", [{"role": "user", "content": [{"type": "text", "text": ""}]}])
    out("parts_null_text_skipped", [{"role": "user", "content": [
        {"type": "text", "text": None}, {"type": "text", "text": "kept"}]}])
    out("parts_system", [{"role": "system", "content": [
        {"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}]}, U1])
    out("parts_assistant_history", [U1, {"role": "assistant", "content": [
        {"type": "text", "text": "Sunny"}, {"type": "text", "text": "and warm."}]}, U2])
    out("parts_input_text", [{"role": "user", "content": [
        {"type": "input_text", "text": "x"}, {"type": "refusal", "refusal": "no"}]}])
    out("parts_whitespace", [{"role": "user", "content": [
        {"type": "text", "text": "  padded  "}, {"type": "text", "text": "\n"}]}])

    # Tools: none, empty list, some.
    out("tools_empty_list", [SYS, U1], tools=[])
    out("tools_empty_list_no_system", [U1], tools=[])
    out("tools", [SYS, U1], tools=TOOLS)
    out("tools_no_system", [U1], tools=TOOLS)
    out("tools_unicode", [U1], tools=[UNICODE])
    out("tools_nogen", [SYS, U1], gen=False, tools=TOOLS)

    # Tool calls and results.
    c1 = call("abc123XYZ", "get_weather", "{\"city\": \"Paris\"}")
    c2 = call("def456UVW", "get_weather", "{\"city\": \"Tokyo\", \"unit\": \"c\"}")
    out("tool_call_pending", [SYS, U1, calling(None, c1)], gen=False, tools=TOOLS)
    out("tool_roundtrip", [SYS, U1, calling(None, c1), result("abc123XYZ", "sunny, 24C")], tools=TOOLS)
    out("tool_roundtrip_nogen", [SYS, U1, calling(None, c1), result("abc123XYZ", "sunny, 24C")],
        gen=False, tools=TOOLS)
    out("tool_roundtrip_answer", [SYS, U1, calling(None, c1), result("abc123XYZ", "sunny, 24C"),
                                  {"role": "assistant", "content": "It is sunny."}, U2], tools=TOOLS)
    out("tool_call_with_content", [SYS, U1, calling("Let me check.", c1),
                                   result("abc123XYZ", "sunny")], tools=TOOLS)
    out("tool_call_empty_content", [U1, calling("", c1), result("abc123XYZ", "sunny")], tools=TOOLS)
    out("tool_calls_parallel", [SYS, U1, calling(None, c1, c2), result("abc123XYZ", "sunny"),
                                result("def456UVW", "rainy")], tools=TOOLS)
    out("tool_args_object_nested", [U1, calling(None, call("ghi789RST", "search",
        "{\"q\": \"caf\\u00e9 <b>\", \"k\": 3, \"ratio\": 0.5, \"opts\": {\"a\": [1, 2.0, null, true]}}")),
        result("ghi789RST", "[]")], tools=TOOLS)
    out("tool_args_invalid_json", [U1, calling(None, call("jkl012MNO", "search", "{not json")),
                                   result("jkl012MNO", "error")], tools=TOOLS)
    out("tool_args_empty_string", [U1, calling(None, call("pqr345STU", "search", "")),
                                   result("pqr345STU", "ok")], tools=TOOLS)
    out("tool_result_parts", [U1, calling(None, c1), {"role": "tool", "tool_call_id": "abc123XYZ", "content": [
        {"type": "text", "text": "line one"}, {"type": "text", "text": ""}, {"type": "text", "text": "line three"}]}],
        tools=TOOLS)
    out("tool_result_empty", [U1, calling(None, c1), result("abc123XYZ", "")], tools=TOOLS)
    out("tool_result_json", [U1, calling(None, c1), result("abc123XYZ", "{\"temp\": 24, \"sky\": \"clear\"}")],
        tools=TOOLS)
    out("tool_result_named", [U1, calling(None, c1), result("abc123XYZ", "sunny", name="get_weather")],
        tools=TOOLS)
    out("tool_args_scalar", [U1, calling(None, call("vwx678YZA", "search", "42")), result("vwx678YZA", "ok")],
        tools=TOOLS)
    out("tool_args_array", [U1, calling(None, call("bcd901EFG", "search", "[1, \"two\"]")),
                            result("bcd901EFG", "ok")], tools=TOOLS)
    out("tool_args_padded", [U1, calling(None, call("hij234KLM", "get_weather", " {\"city\": \"Oslo\"} \n")),
                             result("hij234KLM", "cold")], tools=TOOLS)
    out("tool_call_no_tools_field", [U1, calling(None, c1), result("abc123XYZ", "sunny")])
    out("tool_calls_empty_list", [U1, {"role": "assistant", "content": "Plain.", "tool_calls": []}, U2])
    out("tool_two_rounds", [SYS, U1, calling(None, c1), result("abc123XYZ", "sunny"),
                            {"role": "assistant", "content": "Sunny in Paris."}, U2,
                            calling(None, c2), result("def456UVW", "rainy")], tools=TOOLS)

    # Reasoning (templates that show it use reasoning_content / reasoning or <think> in content).
    out("reasoning_field", [U1, {"role": "assistant", "content": "Sunny.", "reasoning": "Look it up."}, U2])
    out("reasoning_content_field", [U1, {"role": "assistant", "content": "Sunny.",
                                         "reasoning_content": "Think first."}, U2])
    out("reasoning_last_turn_nogen", [U1, {"role": "assistant", "content": "Sunny.", "reasoning": "Hmm."}],
        gen=False)
    out("think_in_content", [U1, {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nSunny."}, U2])
    out("reasoning_with_tool_call", [U1, dict(calling(None, c1), reasoning="Need the weather."),
                                     result("abc123XYZ", "sunny")], tools=TOOLS)
    out("thinking_off", [SYS, U1], chat_template_kwargs={"enable_thinking": False})
    out("thinking_on", [SYS, U1], chat_template_kwargs={"enable_thinking": True})
    out("thinking_flag_deepseek", [U1], chat_template_kwargs={"thinking": True})
    out("reasoning_effort_high", [SYS, U1], chat_template_kwargs={"reasoning_effort": "high"})

    # continue_final_message: the assistant's partial answer is continued.
    out("continue_final", [U1, {"role": "assistant", "content": "The weather in Paris is"}], gen=False,
        continue_final_message=True)
    out("continue_final_trailing_space", [U1, {"role": "assistant", "content": "Partial answer "}], gen=False,
        continue_final_message=True)
    out("continue_final_parts", [U1, {"role": "assistant", "content": [
        {"type": "text", "text": "First part."}, {"type": "text", "text": "Second"}]}], gen=False,
        continue_final_message=True)
    out("continue_final_system", [SYS, U1, A1, U2, {"role": "assistant", "content": "Tokyo is"}], gen=False,
        continue_final_message=True)

    # Roles and keys vLLM passes through: developer (the template also sees tools=None on it),
    # DeepSeek V4's task marker.
    out("developer_role", [{"role": "developer", "content": "Answer in French."}, U1])
    out("task_marker", [{"role": "user", "content": "Summarize.", "task": "summary"}])

    # Text that templates and tokenizers must pass through untouched.
    out("unicode_text", [{"role": "user", "content": "héllo 世界 🌍 \u2028 tab\there"}])
    out("special_token_text", [{"role": "user", "content": "<|im_end|> [INST] <start_of_turn> <｜User｜>"}])
    out("newlines", [{"role": "user", "content": "\n\nline\r\nnext\n\n"}])
    out("names", [{"role": "user", "content": "hi", "name": "alice"}, {"role": "assistant", "content": "hello"},
                  {"role": "user", "content": "bye", "name": "alice"}])

    # Seeded random conversations: alternating turns, text drawn from awkward pieces, content as a
    # string or as parts, some assistant turns calling a tool whose result follows.
    r = random.Random(20261202)
    for i in range(40):
        msgs, gen, extra = random_case(r)
        out("random_%02d" % i, msgs, gen, **extra)


PIECES = ["hello", "", " ", "\n", "\n\n", "\t", "café", "日本語", "🌍", "<b>&amp;</b>", "\"quoted\"",
          "back\\slash", "{\"json\": 1}", "{{ not jinja }}", "{% raw %}", "  lead", "trail  ", "\u2028",
          "\r\n", "[INST]", "<|im_start|>", "<think>", "</think>", "0.0", "1e-07"]


def random_text(r):
    return "".join(r.choice(PIECES) for _ in range(r.randint(1, 5)))


def random_content(r):
    if r.random() < 0.7:
        return random_text(r)
    return [r.choice([{"type": "text", "text": random_text(r)}, {"type": "text", "text": ""}, random_text(r)])
            for _ in range(r.randint(1, 3))]


def random_case(r):
    msgs = []
    if r.random() < 0.5:
        msgs.append({"role": "system", "content": random_content(r)})
    tools = TOOLS if r.random() < 0.5 else None
    n = 0
    for turn in range(r.randint(1, 4)):
        msgs.append({"role": "user", "content": random_content(r)})
        if tools and r.random() < 0.4:
            n += 1
            cid = "rnd%06d" % (r.randint(0, 999999))
            args = json.dumps({"city": random_text(r)}, ensure_ascii=r.random() < 0.5)
            msgs.append(calling(r.choice([None, "", random_text(r)]), call(cid, "get_weather", args)))
            msgs.append(result(cid, random_content(r)))
        msgs.append({"role": "assistant", "content": random_content(r)})
    gen = r.random() < 0.7
    if gen:
        msgs.append({"role": "user", "content": random_content(r)})
    extra = {"tools": tools} if tools else {}
    return msgs, gen, extra


if __name__ == "__main__":
    main()
