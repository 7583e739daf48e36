#!/usr/bin/env python3
"""Writes the context-variable sets in testdata/jinja/messages/ used to
render the real chat templates (run before jinja_oracle.py):

    python3 tools/oracle/jinja_messages.py testdata/jinja/messages

The files are written by Python's json module so that numbers keep the
spelling Python gives them; Go tests read them with jinja.FromJSON.
"""

import json
import os
import sys

SPECIAL = {
    "bos_token": "<|begin_of_text|>",
    "eos_token": "<|im_end|>",
    "pad_token": "<|endoftext|>",
    "unk_token": None,
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather for a city <b>now</b> & later \u2028 caf\u00e9 \u2603",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                    "days": {"type": "integer", "minimum": 0, "maximum": 14},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": None,
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "threshold": {"type": "number", "default": 0.0, "minimum": 1e-07, "maximum": 2.5e20},
                    "limit": {"type": "integer", "default": 10, "big": 123456789012345678901234567890},
                    "flags": {"type": "array", "items": {"type": "boolean"}, "default": [True, False, None]},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_code",
            "description": "Run code.\nTabs\there, backslash \\ and control \u0001 chars.",
            "parameters": None,
        },
    },
]


def conversation(n_turns):
    msgs = [{"role": "system", "content": "You are a helpful assistant. Answer in \u65e5\u672c\u8a9e when asked."}]
    for i in range(n_turns):
        msgs.append({"role": "user", "content": "Question %d: what is the weather in city %d? \U0001F600" % (i, i)})
        if i % 3 == 1:
            msgs.append({
                "role": "assistant",
                "content": "",
                "reasoning_content": "Need weather for city %d." % i,
                "tool_calls": [
                    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "City %d" % i, "days": i, "ratio": 0.5}}},
                    {"type": "function", "function": {"name": "search", "arguments": {"query": "weather %d" % i}}},
                ],
            })
            msgs.append({"role": "tool", "content": "{\"temp\": %d.5, \"unit\": \"celsius\"}" % i, "name": "get_weather"})
            msgs.append({"role": "tool", "content": "results for %d" % i, "name": "search"})
        msgs.append({"role": "assistant", "content": "<think>\nthinking about %d\n</think>\n\nIt is sunny in city %d." % (i, i)})
    return msgs


SETS = {
    "01_simple": {
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hello!"},
        ],
        "add_generation_prompt": True,
    },
    "02_no_system": {
        "messages": [{"role": "user", "content": "Unicode: \u00e9\u00e8 \u4e2d\u6587 \U0001F680 \u2028 tab\t quote\" back\\"}],
        "add_generation_prompt": True,
    },
    "03_multi_turn_thinking": {
        "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "<think>\nsimple math\n</think>\n\n4"},
            {"role": "user", "content": "times 3?"},
            {"role": "assistant", "content": "12", "reasoning_content": "4*3=12"},
            {"role": "user", "content": "thanks"},
        ],
        "add_generation_prompt": True,
    },
    "04_no_thinking": {
        "messages": [{"role": "user", "content": "Quick answer please."}],
        "add_generation_prompt": True,
        "enable_thinking": False,
    },
    "05_tools": {
        "messages": [
            {"role": "system", "content": "Use tools when needed."},
            {"role": "user", "content": "Weather in Paris and search news."},
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "scale": 1.0, "tiny": 1e-07, "huge": 2.5e20, "zero": 0.0, "neg": -0.0, "html": "<a>&</a>", "nested": {"b": [1, 2.5, None, True]}}}},
                    {"id": "call_2", "type": "function", "function": {"name": "search", "arguments": {"query": "news \u2028 caf\u00e9"}}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21.5}"},
            {"role": "tool", "tool_call_id": "call_2", "name": "search", "content": "Nothing new."},
            {"role": "assistant", "content": "It is 21.5\u00b0C in Paris; no news."},
            {"role": "user", "content": "<tool_response>fake</tool_response>"},
        ],
        "tools": TOOLS,
        "add_generation_prompt": True,
    },
    "06_long_tools": {
        "messages": conversation(7),
        "tools": TOOLS,
        "add_generation_prompt": True,
        "enable_thinking": True,
    },
    "08_string_arguments": {
        "messages": [
            {"role": "user", "content": "Call it."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"type": "function", "function": {"name": "search", "arguments": "{\"query\": \"x\"}"}}]},
            {"role": "tool", "content": "ok"},
        ],
        "tools": TOOLS[:1],
        "add_generation_prompt": True,
    },
    "09_minimal": {
        "messages": [{"role": "user", "content": "hi"}],
    },
    "10_multimodal": {
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "You see images."}]},
            {"role": "user", "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image", "image": "http://example.invalid/cat.png"},
                {"type": "video", "video": "clip.mp4"},
                {"type": "text", "text": "And this one?"},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
            {"role": "user", "content": "Thanks"},
        ],
        "add_generation_prompt": True,
    },
    "11_reasoning_effort": {
        "messages": [
            {"role": "developer", "content": "Be precise."},
            {"role": "user", "content": "Compute 2**10."},
            {"role": "assistant", "content": "1024", "thinking": "2^10 = 1024", "reasoning": "2^10 = 1024", "reasoning_content": "2^10 = 1024"},
            {"role": "user", "content": "And 2**20?"},
        ],
        "tools": TOOLS[:2],
        "reasoning_effort": "high",
        "builtin_tools": ["browser", "python"],
        "model_identity": "You are Test.",
        "add_generation_prompt": True,
    },
    "12_llama_options": {
        "messages": [
            {"role": "system", "content": "Knowledge cutoff test."},
            {"role": "user", "content": "Use a tool."},
            {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
            {"role": "ipython", "content": {"temp": -3.5}},
            {"role": "tool", "content": "{\"temp\": -3.5}"},
        ],
        "tools": TOOLS[:1],
        "date_string": "07 Mar 2025",
        "tools_in_user_message": False,
        "add_generation_prompt": True,
    },
    "13_documents": {
        "messages": [{"role": "user", "content": "Summarize the documents."}],
        "documents": [{"title": "Doc A", "text": "Alpha text."}, {"title": "Doc B", "text": "Beta\ntext."}],
        "add_generation_prompt": True,
    },
    "14_tool_only_turn": {
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "", "reasoning_content": "call the tool", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": ""},
            {"role": "assistant", "content": "Done."},
        ],
        "tools": TOOLS,
        "add_generation_prompt": False,
        "enable_thinking": False,
    },
    "07_continue": {
        "messages": [
            {"role": "user", "content": "Write a haiku."},
            {"role": "assistant", "content": "Autumn moonlight\u2014"},
        ],
        "add_generation_prompt": False,
    },
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, ctx in SETS.items():
        full = dict(SPECIAL)
        full.update(ctx)
        with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(full, f, ensure_ascii=False, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
