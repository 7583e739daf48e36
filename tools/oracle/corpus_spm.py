#!/usr/bin/env python3
"""Golden files for the SentencePiece-style tokenizers (testdata/models/llama2, testdata/models/gemma3).

    python3 tools/oracle/corpus_spm.py          # the spm corpus only (deterministic)
    python3 tools/oracle/corpus_spm.py --ids    # + reference ids and decodes from the Rust oracle
                                                # (needs `npm ci` in tools/oracle)

Inputs (testdata/tokenizer/, one JSON string per line, split on "\\n" only):
  spm.jsonl[.gz]   seeded strings aimed at SentencePiece rules: leading/trailing spaces and space runs,
                   typed "▁", characters missing from the vocabs (byte fallback), literal "<0x0A>",
                   each family's added tokens and near misses, chat-shaped text, newline/tab runs,
                   long words; plus the shared fuzz atoms of corpus.py
  the shared sets of corpus.py: fuzz, edge, docs, mixed.txt

Outputs, per model (testdata/tokenizer/<model>/):
  <set>.ids.jsonl[.gz]     ids of encode(text, add_special_tokens=false), line N for input line N
  <set>.text.jsonl[.gz]    decode(ids, skip_special_tokens=false) of those ids (edge, spm, fuzz):
                           line N is null when the decode is input line N itself, else the JSON
                           string of the decode (most texts round-trip; this keeps the files small)
  decode.ids.jsonl[.gz]    seeded adversarial id sequences (byte tokens making valid and invalid
                           UTF-8, "▁" tokens at the start, added tokens, unknown ids)
  decode.text.jsonl[.gz]   their decode
  special.ids.jsonl        ids of encode(text, add_special_tokens=true) of the first 200 spm lines
                           (the TemplateProcessing BOS that stitch must NOT add)
  added.jsonl[.gz]         every added token of that model (Gemma 3: 6,415) alone, inside words, cut
                           in two and doubled, plus 4,000 random mixes (corpus.py's added_cases,
                           seeded by the model's name); with added.ids.jsonl and added.text.jsonl

    python3 tools/oracle/corpus_spm.py --ids --added-only   # only the added sets (spm corpus kept)
"""
import gzip
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402  (the shared building blocks and output helpers)

ROOT = corpus.ROOT
OUT = corpus.OUT
SEED = 20261202
SPM_COUNT = 30000
DECODE_COUNT = 20000

MODELS = {
    "llama2": os.path.join(ROOT, "testdata", "models", "llama2", "tokenizer.json"),
    "gemma3": os.path.join(ROOT, "testdata", "models", "gemma3", "tokenizer.json.gz"),
}

SP = "\u2581"
ADDED = ["<s>", "</s>", "<unk>", "<pad>", "<eos>", "<bos>", "<mask>", "[multimodal]", "<start_of_turn>",
         "<end_of_turn>", "<start_of_image>", "<end_of_image>", "<image_soft_token>", "<unused0>",
         "<unused99>", "<unused6241>", "<h1>", "</h1>", "<h6>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>"]
NEAR = ["<s", "s>", "</s", "<<s>>", "<s><s>", "</s></s>", " <s> ", "<s>" + SP, SP + "<s>", "<unk", "<start_of_turn",
        "<end_of_turn>>", "<unused", "<unused-1>", "<unused6242>", "<h7>", "< s>", "<S>", "<0x0A>", "<0x0a>",
        "<0xZZ>", "<0x+A>", "<0x00>", "<0xFF>", "<0x0A", "0x0A>", "<0x0A><0x0B>", "<bos><bos>"]
CHAT = [
    "<s>[INST] What is 2+2? [/INST] 4</s>", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]",
    "<s>[INST] a [/INST] b</s>[INST] c [/INST]", "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    "<start_of_turn>model\nSure! Here:\n\n```py\nprint(1)\n```<end_of_turn>\n", "<start_of_turn>user\n<start_of_image><end_of_image>",
    "<start_of_turn>user\n \n<end_of_turn>", "[INST]  [/INST]", "<s> </s>", "<s>\n</s>", "<s>  x", "x  <s>  y",
]
RARE = [(0x20000, 0x2a6df), (0x17000, 0x187f7), (0x1f300, 0x1faff), (0x0, 0x1f), (0x7f, 0x9f), (0xe000, 0xf8ff),
        (0xf0000, 0xffffd), (0x10000, 0x1ffff), (0x2f800, 0x2fa1f), (0xa000, 0xa48c), (0x1d400, 0x1d7ff),
        (0x0300, 0x036f), (0xfff0, 0xfffd), (0x2580, 0x259f), (0x2000, 0x206f), (0x3000, 0x303f)]


def rand_rare(rng, n):
    return "".join(corpus.rand_cp(rng, RARE) for _ in range(n))


def spaces(rng):
    return rng.choice([" ", "  ", "   ", " " * rng.randint(4, 40), SP, SP * 2, SP + " ", " " + SP, "\u00a0", "\u3000",
                       "\t", " \t", "\n", " \n", "\n ", "\r\n", ""])


def spm_atom(rng):
    k = rng.randrange(16)
    if k == 0:
        return rng.choice(ADDED)
    if k == 1:
        return rng.choice(NEAR)
    if k == 2:
        return rng.choice(CHAT)
    if k == 3:
        return spaces(rng) + rng.choice(corpus.WORDS) + spaces(rng)
    if k == 4:
        return rand_rare(rng, rng.randint(1, 6))
    if k == 5:
        return rng.choice(["\n", "\t", " ", SP, "\r\n", "\n\n", " \n"]) * rng.randint(1, 80)
    if k == 6:  # long words without spaces: one BPE word of thousands of symbols (the heap path)
        unit = rng.choice(["a", "ab", "xyz", "\u4e2d", "\u00e9", "\U0001f600", "1", "-", SP, "\u0915\u094d",
                           "\U00020001", "na\u00efve"])
        return unit * rng.randint(50, 3000)
    if k == 7:
        return " ".join(rng.choice(corpus.WORDS) for _ in range(rng.randint(1, 30)))
    if k == 8:
        return rng.choice(ADDED) + spaces(rng) + rng.choice(corpus.WORDS)
    if k == 9:
        return rng.choice(corpus.WORDS) + rng.choice(ADDED) + rng.choice(corpus.WORDS)
    if k == 10:
        return "".join(rng.choice(["<", "0", "x", "A", "F", ">", " ", SP, "s", "/"]) for _ in range(rng.randint(1, 12)))
    if k == 11:
        return rng.choice(corpus.CODE)
    if k == 12:
        return corpus.rand_json(rng)
    if k == 13:
        return "".join(corpus.rand_cp(rng, corpus.SCRIPT_RANGES) for _ in range(rng.randint(1, 20)))
    return corpus.gen_atom(rng)


def spm_string(rng):
    n = rng.choice([1, 1, 1, 2, 3, 4, 6, 10])
    seps = ["", "", " ", "  ", "\n", SP, "\t"]
    s = "".join(spm_atom(rng) + rng.choice(seps) for _ in range(n))
    if rng.random() < 0.25:
        s = rng.choice([" ", "  ", SP, "\n", "<s>", "<bos>"]) + s
    if rng.random() < 0.15:
        s = s + rng.choice([" ", "  ", SP, "\n", "</s>", "<end_of_turn>"])
    return s


def load_vocab(path):
    data = open(path, "rb").read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    d = json.loads(data)
    vocab = d["model"]["vocab"]
    added = {a["content"]: a["id"] for a in d["added_tokens"]}
    size = max(max(vocab.values()), max(added.values())) + 1
    return vocab, added, size


def decode_cases(rng, path):
    vocab, added, size = load_vocab(path)
    byte_ids = [vocab["<0x%02X>" % b] for b in range(256)]
    space_ids = [i for t, i in vocab.items() if t.startswith(SP)]
    ws_ids = [i for t, i in vocab.items() if set(t) <= {SP, " ", "\n", "\t"}]
    added_ids = sorted(added.values())
    cases = []
    for _ in range(DECODE_COUNT):
        ids = []
        for _ in range(rng.choice([1, 1, 2, 3, 5, 8, 16, 40])):
            k = rng.randrange(10)
            if k == 0:
                ids.append(rng.randrange(size))
            elif k == 1:  # a character's bytes, whole or cut
                ch = rng.choice(["\u00e9", "\u4e2d", "\U0001f600", "\n", "a", "\u20ac", "\U00020001", " "])
                bs = list(ch.encode("utf-8"))
                if rng.random() < 0.4:
                    bs = bs[:rng.randint(1, len(bs))]
                ids.extend(byte_ids[b] for b in bs)
            elif k == 2:
                ids.extend(byte_ids[rng.randrange(256)] for _ in range(rng.randint(1, 5)))
            elif k == 3:
                ids.append(rng.choice(space_ids))
            elif k == 4:
                ids.append(rng.choice(ws_ids))
            elif k == 5:
                ids.append(rng.choice(added_ids))
            elif k == 6:
                ids.append(size + rng.randrange(1000))  # unknown: skipped
            else:
                ids.append(rng.randrange(min(size, 40000)))
        cases.append(ids)
    return cases


def write_out(rel, data):
    """Writes testdata/tokenizer/<rel>, gzipped (mtime 0) when over corpus.GZIP_OVER."""
    for stale in (rel, rel + ".gz"):
        if os.path.exists(os.path.join(OUT, stale)):
            os.remove(os.path.join(OUT, stale))
    os.makedirs(os.path.dirname(os.path.join(OUT, rel)), exist_ok=True)
    if len(data) > corpus.GZIP_OVER:
        rel += ".gz"
        with open(os.path.join(OUT, rel), "wb") as f:
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as z:
                z.write(data)
    else:
        with open(os.path.join(OUT, rel), "wb") as f:
            f.write(data)
    print(f"wrote {rel}")


def read_input(name):
    path = os.path.join(OUT, name)
    if not os.path.exists(path):
        path += ".gz"
    data = open(path, "rb").read()
    return gzip.decompress(data) if path.endswith(".gz") else data


def oracle(model, data, *flags):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenize.js")
    res = subprocess.run(["node", script, MODELS[model], *flags], input=data, capture_output=True, check=True)
    if res.stdout.count(b"\n") != data.count(b"\n"):
        sys.exit(f"oracle: {model} {flags}: line count mismatch")
    return res.stdout


def only_changed(inputs, decodes):
    """Replaces each decode that equals its input line by null (inputs and decodes are JSON lines)."""
    ins, outs = inputs.split(b"\n"), decodes.split(b"\n")
    lines = [b"null" if json.loads(o) == json.loads(i) else o for i, o in zip(ins, outs) if o]
    return b"\n".join(lines) + b"\n"


def added_sets(model):
    """model/added.jsonl: the strings around each of its added tokens, with ids and decodes."""
    corpus.MODELS[model] = MODELS[model]
    cases = corpus.added_cases(model, random.Random(f"{corpus.SEED}-{model}"))
    data = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases).encode("utf-8")
    corpus.write_out(f"{model}/added.jsonl", data)  # gzip from 256 KiB, as the byte-level families'
    ids = oracle(model, data)
    corpus.write_out(f"{model}/added.ids.jsonl", ids)
    corpus.write_out(f"{model}/added.text.jsonl", only_changed(data, oracle(model, ids, "--decode")))


def main():
    if "--added-only" in sys.argv:
        for model in MODELS:
            added_sets(model)
        return
    rng = random.Random(SEED)
    spm = [spm_string(rng) for _ in range(SPM_COUNT)]
    spm_name = corpus.write_lines("spm.jsonl", spm)
    print(f"spm {len(spm)}")
    if "--ids" not in sys.argv:
        return
    inputs = {s: read_input(s + ".jsonl") for s in ("edge", "fuzz", "docs")}
    inputs["spm"] = read_input(spm_name)
    mixed = open(os.path.join(OUT, "mixed.txt"), "rb").read()
    inputs["mixed"] = (json.dumps(mixed.decode("utf-8"), ensure_ascii=False) + "\n").encode("utf-8")
    for model in MODELS:
        for s, data in inputs.items():
            ids = oracle(model, data)
            write_out(f"{model}/{s}.ids.jsonl", ids)
            if s in ("edge", "spm", "fuzz"):
                write_out(f"{model}/{s}.text.jsonl", only_changed(data, oracle(model, ids, "--decode")))
        first = b"".join(inputs["spm"].split(b"\n")[i] + b"\n" for i in range(200))
        write_out(f"{model}/special.ids.jsonl", oracle(model, first, "--add-special-tokens"))
        cases = decode_cases(random.Random(SEED + 1), MODELS[model])
        ids = "".join(json.dumps(c) + "\n" for c in cases).encode("utf-8")
        write_out(f"{model}/decode.ids.jsonl", ids)
        write_out(f"{model}/decode.text.jsonl", oracle(model, ids, "--decode"))
        added_sets(model)


if __name__ == "__main__":
    main()
