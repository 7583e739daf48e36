"""gpt-oss's own chat template (Python Jinja2, transformers' setup) on the conversations where it
and openai_harmony are meant to agree: no typed special tokens, instructions only together with
tools (the template adds "\n\n" after instructions alone), parameters without defaults, no tool
outputs (the template writes them through tojson), arguments written as tojson writes them.

Writes testdata/harmony/jinja/golden.json: each case's Responses request body (what stitch
renders through Harmony) and the template's text for the same conversation in chat form.
Template: testdata/harmony/jinja/openai-gpt-oss-120b.jinja (the chat_template of
openai/gpt-oss-120b, as copied by llama.cpp's models/templates; sha256 a4c9919c…8146).

Usage: python3 tools/oracle/harmony_jinja.py testdata/harmony/jinja
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from render_oracle import make_env  # noqa: E402  (transformers' Jinja setup, fixed strftime_now)

START_DATE = "2026-01-02"  # render_oracle's fixed strftime_now

WEATHER = {"name": "get_weather", "description": "Gets the current weather.", "parameters": {
    "type": "object",
    "properties": {"location": {"type": "string", "description": "City name"}, "days": {"type": "integer"}},
    "required": ["location"]}}
TIME = {"name": "get_time", "description": "Gets the time in a zone.", "parameters": {
    "type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}


def chat_tools(tools):
    return [{"type": "function", "function": t} for t in tools]


def resp_tools(tools):
    return [dict(type="function", **t) for t in tools]


def cases():
    q = "What is 2 + 2?"
    yield "plain", {"messages": [{"role": "user", "content": q}]}, {"input": q}
    for effort in ("low", "high"):
        yield f"effort-{effort}", {"messages": [{"role": "user", "content": q}], "reasoning_effort": effort}, \
            {"input": q, "reasoning": {"effort": effort}}
    yield "multi-turn", {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "how are you?"}]}, \
        {"input": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "output_text", "text": "Hello!"}]}, {"role": "user", "content": "how are you?"}]}
    yield "thinking-dropped", {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!", "thinking": "Greet back."}, {"role": "user", "content": "bye"}]}, \
        {"input": [{"role": "user", "content": "hi"}, {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "Greet back."}]}, {"role": "assistant", "content": [{"type": "output_text", "text": "Hello!"}]}, {"role": "user", "content": "bye"}]}
    yield "tools", {"messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": chat_tools([WEATHER])}, \
        {"input": "Weather in Oslo?", "tools": resp_tools([WEATHER])}
    yield "tools-instructions", {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Oslo?"}], "tools": chat_tools([WEATHER, TIME])}, \
        {"instructions": "Be brief.", "input": "Weather in Oslo?", "tools": resp_tools([WEATHER, TIME])}
    yield "tools-developer-item", {"messages": [{"role": "developer", "content": "Use tools."}, {"role": "user", "content": "Zeit in Tokio? 東京"}], "tools": chat_tools([TIME]), "reasoning_effort": "high"}, \
        {"input": [{"role": "developer", "content": "Use tools."}, {"role": "user", "content": "Zeit in Tokio? 東京"}], "tools": resp_tools([TIME]), "reasoning": {"effort": "high"}}
    yield "tool-call-pending", {"messages": [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "thinking": "Need the weather tool.", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"location": "Paris"}}}]}], "tools": chat_tools([WEATHER])}, \
        {"input": [{"role": "user", "content": "Weather in Paris?"}, {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "Need the weather tool."}]}, {"type": "function_call", "name": "get_weather", "arguments": "{\"location\": \"Paris\"}", "call_id": "c1"}], "tools": resp_tools([WEATHER])}
    # Not meant to agree, kept to document it: openai_harmony's auto_drop_analysis drops analysis
    # only before the FIRST final message, so "t2" stays; the template drops every earlier thinking.
    yield "final-then-user (differs: harmony keeps analysis between finals)", {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "A", "thinking": "t1"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "B", "thinking": "t2"}, {"role": "user", "content": "c"}], "reasoning_effort": "low"}, \
        {"input": [{"role": "user", "content": "a"}, {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "t1"}]}, {"role": "assistant", "content": [{"type": "output_text", "text": "A"}]}, {"role": "user", "content": "b"}, {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "t2"}]}, {"role": "assistant", "content": [{"type": "output_text", "text": "B"}]}, {"role": "user", "content": "c"}], "reasoning": {"effort": "low"}}


def main(folder):
    with open(os.path.join(folder, "openai-gpt-oss-120b.jinja"), encoding="utf-8") as f:
        template = make_env().from_string(f.read())
    out = []
    for name, chat, request in cases():
        kwargs = {k: v for k, v in chat.items() if k != "messages"}
        text = template.render(messages=chat["messages"], add_generation_prompt=True, **kwargs)
        rec = {"name": name, "start_date": START_DATE, "request": json.dumps(request, ensure_ascii=False), "text": text}
        if "(differs" in name:
            rec["differs"] = True
        out.append(rec)
    with open(os.path.join(folder, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(out)} cases")


if __name__ == "__main__":
    main(sys.argv[1])
