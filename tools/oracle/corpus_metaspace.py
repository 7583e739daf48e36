#!/usr/bin/env python3
"""Golden files for the Metaspace pre-tokenizer and decoder (testdata/tokenizer/metaspace/).

    python3 tools/oracle/corpus_metaspace.py     # needs `npm ci` in tools/oracle

No model file that ships offline uses Metaspace (Mistral 7B v0.3 and other legacy=false
SentencePiece conversions do), so each variant is the Mixtral / Mistral 7B v0.x tokenizer.json of
testdata/models/llama2 with its normalizer, pre_tokenizer and decoder replaced by the ones in
testdata/tokenizer/metaspace/variants.json; the Rust crate (tokenize.js) is the oracle, and the Go
test builds the same files from the same two inputs.

Outputs per variant (testdata/tokenizer/metaspace/<variant>/):
  <set>.ids.jsonl[.gz]   ids of encode(text, add_special_tokens=false) of each input line
  <set>.text.jsonl[.gz]  decode(ids, skip_special_tokens=false) of those ids (null: the input itself)
  decode.text.jsonl      decode of the first DECODE_COUNT arrays of llama2/decode.ids.jsonl
Sets: edge (all), spm (the first SPM_COUNT lines of spm.jsonl.gz), llama2's added set (the first
ADDED_COUNT lines), start.jsonl (written here: texts whose first segment does or does not begin
at offset 0, the case prepend_scheme "first" turns on) and chat: the prompt texts of
testdata/render/mistral_v0 (Mistral v0.x's template, vLLM's tool version), as a Mistral 7B v0.3
prompt would be tokenized. The "first" variant (Mistral 7B v0.3's settings) also gets the whole
spm set (30,000) and the shared fuzz set (60,000): spm_full and fuzz (ids only; their decodes are
checked by the smaller sets).
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

OUT = os.path.join(corpus.OUT, "metaspace")
BASE = os.path.join(corpus.ROOT, "testdata", "models", "llama2", "tokenizer.json")
SPM_COUNT = 3000
ADDED_COUNT = 2000
DECODE_COUNT = 3000

START = ["Hello", " Hello", "  Hello", "\u2581Hello", "\u2581 Hello", " \u2581Hello", "<s>Hello", "<s> Hello",
         "<s>  Hello", "<s>\u2581Hello", "Hello<s>", "Hello <s> world", "Hello<s>world", "<s>", "<s><s>x",
         "</s> x", "[INST] Hi [/INST]", "<s>[INST] Hi [/INST] Yes</s>[INST] More [/INST]", " ", "  ", "\u2581",
         "\n", "\nHello", "x\n\ny", "a b  c   d", "\t x", "\u00a0x", "\u3000x", "<unk>x", "x<unk> y",
         "\u2581\u2581\u2581", "\u2581 \u2581", "<s> ", "<s>\n", "<0x0A>", " <0x0A>", "日本 語", " 🙂 x",
         "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]", "a</s>b", "a </s> b", "</s></s>"]


def chat_texts():
    path = os.path.join(corpus.ROOT, "testdata", "render", "mistral_v0", "vllm-tool-mistral.text.jsonl")
    with open(path, encoding="utf-8") as f:
        return [d["text"] for d in map(json.loads, filter(str.strip, f)) if "text" in d]


def main():
    with open(os.path.join(OUT, "variants.json"), encoding="utf-8") as f:
        variants = json.load(f)
    with open(BASE, encoding="utf-8") as f:
        base = json.load(f)
    corpus.OUT = OUT  # write_lines / write_out write under metaspace/
    corpus.write_lines("start.jsonl", START)
    corpus.write_lines("chat.jsonl", chat_texts())
    sets = {
        "edge": corpus.read_set("../edge.jsonl"),
        "spm": b"".join(corpus.read_set("../spm.jsonl").splitlines(keepends=True)[:SPM_COUNT]),
        "added": b"".join(corpus.read_set("../llama2/added.jsonl").splitlines(keepends=True)[:ADDED_COUNT]),
        "start": corpus.read_set("start.jsonl"),
        "chat": corpus.read_set("chat.jsonl"),
    }
    full = {"spm_full": corpus.read_set("../spm.jsonl"), "fuzz": corpus.read_set("../fuzz.jsonl")}
    decode_ids = b"".join(corpus.read_set("../llama2/decode.ids.jsonl").splitlines(keepends=True)[:DECODE_COUNT])
    with tempfile.TemporaryDirectory() as tmp:
        for name, parts in variants.items():
            doc = dict(base)
            doc.update(parts)
            path = os.path.join(tmp, name + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f, ensure_ascii=False)
            corpus.MODELS[name] = path
            os.makedirs(os.path.join(OUT, name), exist_ok=True)
            for set_name, data in (sets | full if name == "first" else sets).items():
                ids = corpus.oracle(name, data)
                corpus.write_out(f"{name}/{set_name}.ids.jsonl", ids)
                if set_name in full:
                    continue
                texts = corpus.oracle(name, ids, "--decode").splitlines()
                inputs = data.splitlines()
                out = [b"null" if json.loads(t) == json.loads(i) else t for t, i in zip(texts, inputs)]
                corpus.write_out(f"{name}/{set_name}.text.jsonl", b"\n".join(out) + b"\n")
            corpus.write_out(f"{name}/decode.text.jsonl", corpus.oracle(name, decode_ids, "--decode"))


if __name__ == "__main__":
    main()
