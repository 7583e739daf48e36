#!/usr/bin/env python3
"""Builds the tokenizer test corpus under testdata/tokenizer/ and, with --ids, its reference ids.

    python3 tools/oracle/corpus.py          # corpus only (deterministic: fixed seed, sorted sources)
    python3 tools/oracle/corpus.py --ids    # corpus + reference ids from the Rust oracle (needs
                                            # `npm ci` in tools/oracle)
    python3 tools/oracle/corpus.py --ids --only=llama3_2,qwen2_5 --keep-corpus   # some models' ids only

Files (one JSON string per line, split on "\\n" only; gzip when larger than 5 MB):
  fuzz.jsonl[.gz]   seeded generated strings (>= 50,000)
  edge.jsonl        hand-written edge cases
  docs.jsonl[.gz]   real multilingual documents from this machine; provenance in docs.sources.txt
  mixed.txt         1 MiB of mixed text (raw UTF-8), for the exactness test and the benchmarks
  <model>/<set>.ids.jsonl[.gz]  reference ids, line N for input line N (model: every key of MODELS)
  <model>/added.jsonl           per model: strings built around each of its added tokens (seeded)
  <model>/decode.jsonl          per model: seeded random id arrays (any id, cut UTF-8 sequences)
  <model>/<set>.decoded.jsonl[.gz]  the oracle's decode of the reference ids, only where it differs
                                from the input text: [line, text] (set: fuzz, edge, docs, added);
                                for decode.jsonl, decode.decoded.jsonl has every line
  <model>/edge.special.ids.jsonl  the edge set encoded with add_special_tokens=true
"""
import glob
import gzip
import gettext
import io
import json
import os
import random
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "testdata", "tokenizer")
SEED = 20260529
FUZZ_COUNT = 60000
DOC_CAP = 12 * 1024  # bytes per document
MIXED_SIZE = 1 << 20
GZIP_OVER = 5 * 1024 * 1024

MODELS = {
    "qwen3": os.path.join(ROOT, "testdata", "models", "qwen3", "tokenizer.json"),
    "gptoss": os.path.join(ROOT, "testdata", "models", "gptoss", "tokenizer.json.gz"),
}
# Byte-level BPE families (issue 15); their model files are gzip-compressed.
for _name in ["llama3_1", "llama3_2", "deepseek_v3", "deepseek_v4", "mistral_nemo", "qwen2_5"]:
    MODELS[_name] = os.path.join(ROOT, "testdata", "models", _name, "tokenizer.json.gz")
ADDED_COUNT = 4000  # random strings mixing a model's added tokens into text, besides 4 per token
DECODE_COUNT = 3000

# ---------------------------------------------------------------- building blocks

WHITESPACE = [" ", "  ", "\t", "\n", "\r", "\r\n", "\n\n", "\u00a0", "\u3000", "\u2028", "\u2029",
              "\u0085", "\x0b", "\x0c", "\u2009", "\u200a", "\u1680", "\u202f", "\u205f", "\u200b",
              "\ufeff", "\u180e", " \n", "\n ", " \r\n", "\r\r\n", "\n\r"]
CONTRACTIONS = ["'s", "'S", "'\u017f", "'t", "'T", "'re", "'RE", "'Re", "'rE", "'ve", "'VE", "'m",
                "'M", "'ll", "'LL", "'Ll", "'d", "'D", "\u2019s", "'x", "'", "''", "'\u017ft"]
ADDED = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
         "</tool_call>", "<tool_response>", "</tool_response>", "<|fim_prefix|>", "<|vision_pad|>",
         "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>",
         "<|constrain|>", "<|startoftext|>", "<|endofprompt|>", "<|reserved_200017|>",
         "<|im_", "<|im_end", "<thi", "</think", "<|", "|>", "<<|im_end|>>", "<|im_start|>user\n",
         "<|im_start|>assistant\n<think>\n\n</think>\n\n", "<|start|>assistant<|channel|>final<|message|>"]
PUNCT = list("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~") + ["\u2014", "\u2026", "\u00ab", "\u00bb", "\u00bf",
         "\u3001", "\u3002", "\uff01", "\u201c", "\u201d", "\u00a7", "\u20ac", "\u00a3", "\u2211",
         "\u221e", "\u2192", "\u2500", "\u2502", "\u00b0", "\u00b1", "\u00d7", "\u2022", "\u30fb"]
OTHER_DIGITS = ["\u0660\u0661\u0662", "\u06f4\u06f5", "\u0966\u0967\u0968", "\uff11\uff12\uff13",
                "\u00b2", "\u00b3", "\u00bd", "\u2162", "\u216b", "\u2460", "\u2469", "\U0001d7ce",
                "\u0e51\u0e52", "\u3007", "\u4e00\u4e8c", "\U0001d2c0\U0001d2c5"]
EMOJI = ["\U0001f600", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
         "\U0001f3f3\ufe0f\u200d\U0001f308", "\U0001f1fa\U0001f1f8", "\U0001f1ef\U0001f1f5", "1\ufe0f\u20e3",
         "\u2764\ufe0f", "\U0001f9d1\u200d\U0001f4bb", "\U0001faf6\U0001f3fb", "\U0001f642\u200d\u2194\ufe0f",
         "\u263a", "\U0001f4a9", "\U0001f98b", "\U0001fae8", "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"]
SCRIPT_RANGES = [  # (lo, hi) code point ranges of letters and marks in many scripts
    (0x41, 0x5a), (0x61, 0x7a), (0xc0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff), (0x531, 0x587),
    (0x5d0, 0x5ea), (0x620, 0x64a), (0x900, 0x97f), (0x980, 0x9ff), (0xb80, 0xbff), (0xe01, 0xe5b),
    (0x10a0, 0x10ff), (0x1100, 0x11ff), (0x1e00, 0x1eff), (0x3041, 0x3096), (0x30a1, 0x30fa),
    (0x4e00, 0x9fff), (0xac00, 0xd7a3), (0xa000, 0xa48c), (0x1200, 0x137c), (0x13a0, 0x13f5),
    (0x20000, 0x2a6df), (0x1f00, 0x1fff), (0x2c00, 0x2c5f), (0xa640, 0xa69f), (0x1780, 0x17ff)]
# Letters, marks and numbers added in Unicode 10-16 (and a few of 17, unassigned for the oracle).
NEW_RANGES = [
    (0x0860, 0x086a), (0x11a00, 0x11a47), (0x11d00, 0x11d59), (0x1b170, 0x1b2fb),  # 10.0
    (0x2ceb0, 0x2ebe0), (0x10d00, 0x10d39), (0x11800, 0x1183b), (0x16e40, 0x16e9a),  # 10-11
    (0x10f30, 0x10f59), (0x1e900, 0x1e95f), (0x11ee0, 0x11ef8), (0x1e2c0, 0x1e2f9),  # 11-12
    (0x10fb0, 0x10fcb), (0x18b00, 0x18cd5), (0x30000, 0x3134a), (0x11900, 0x11959),  # 13
    (0x1df00, 0x1df2a), (0x10570, 0x105bc), (0x12f90, 0x12ff2), (0x1e290, 0x1e2ae),  # 14
    (0x11f00, 0x11f59), (0x1e4d0, 0x1e4f9), (0x31350, 0x323af), (0x1e030, 0x1e08f),  # 15
    (0x11b00, 0x11b09), (0x10ec0, 0x10eff), (0x2ebf0, 0x2ee5d), (0x1d2c0, 0x1d2d3),  # 15-15.1
    (0x10d40, 0x10d8f), (0x16100, 0x16139), (0x16d40, 0x16d79), (0x1e5d0, 0x1e5fa),  # 16
    (0x11bc0, 0x11be1), (0x105c0, 0x105f3), (0x11380, 0x113e2), (0x13460, 0x143fa),  # 16
    (0x1cc00, 0x1ceb3), (0x116d0, 0x116e3), (0x1f8b0, 0x1f8bb), (0x0897, 0x0897),     # 16
    (0x323b0, 0x3347f), (0x10940, 0x10959), (0x1e6c0, 0x1e6ff), (0x11b60, 0x11b67),  # 17
]
COMBINING = [(0x300, 0x36f), (0x1ab0, 0x1ace), (0x1dc0, 0x1dff), (0x20d0, 0x20f0), (0x591, 0x5c7),
             (0x64b, 0x65f), (0x93c, 0x94d), (0x302a, 0x302f), (0x3099, 0x309a), (0xfe20, 0xfe2f)]
NFC_CASES = ["A\u030a", "\u212b", "\u2126", "e\u0301", "e\u0323\u0301", "e\u0301\u0323", "\u1100\u1161",
             "\u1100\u1161\u11a8", "\uac00\u11a8", "\u0344", "\u0958", "\u2adc", "\u1e9b\u0323",
             "\u00c5\u0301", "o\u0308\u0304", "\u0635\u0670", "\u05d1\u05bc", "\ufb2c", "\u0f73",
             "\U0001d15e", "\U000110ab", "\u09c7\u09be", "\u0b47\u0b3e", "\u1025\u102e", "\u3046\u3099",
             "\u30cf\u309a", "\U00011131\U00011127", "\U00011347\U0001133e", "\U000115b8\U000115af",
             "\U00011935\U00011930", "\U0001611e\U0001611e", "\U00016d63\U00016d67", "\U000113c2\U000113b8",
             "a\u0315\u0300\u05ae\u0300b", "\u0041\u030a\u0327", "\u1fbf\u0301"]
WORDS = ["the", "hello", "World", "HTTPServer", "naïve", "café", "Straße", "İstanbul", "ǅemal", "ʰello",
         "über", "déjà", "Ελληνικά", "русский", "ПРИВЕТ", "日本語", "中文字符", "한국어", "עברית",
         "العربية", "हिन्दी", "ภาษาไทย", "ქართული", "Հայերեն", "ꦗꦮ", "isn", "don", "we", "THEY", "you",
         "camelCase", "snake_case", "kebab-case", "XMLHttpRequest", "iOS", "macOS", "ǈ", "ǋ", "ﬁnance"]
CODE = [
    "def f(x):\n    return x * 2\n", "if (a && b) {\n\treturn;\n}\n", "for i := range n {\n\tfmt.Println(i)\n}",
    "const x = await fetch(`/api/${id}`);", "    # comment\n    pass\n", "#include <stdio.h>\nint main(){}",
    "SELECT * FROM t WHERE a = 'x';", "x += 1; y -= 2;", "a/b/c.go:12:5: error", "https://example.com/a?b=1&c=2",
    "```python\nprint('hi')\n```", "<div class=\"a\">&nbsp;</div>", "$ ls -la /usr/local/bin\n",
    "foo.bar().baz[0]->qux", "    \n        \n", "\t\t}\n\t}\n}", "lambda x: x**2 // 3", "// TODO(bob): fix\r\n",
]


def rand_cp(rng, ranges):
    lo, hi = rng.choice(ranges)
    while True:
        c = rng.randint(lo, hi)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def rand_json(rng, depth=0):
    k = rng.randrange(7 if depth < 3 else 4)
    if k == 0:
        return rng.choice(["true", "false", "null"])
    if k == 1:
        return rng.choice(["0", "-1", "3.14", "1e-07", "2.5e+20", "12345678901234567890", "0.0"])
    if k == 2 or k == 3:
        return json.dumps(gen_atom(rng, small=True), ensure_ascii=rng.random() < 0.3)
    if k == 4:
        return "[" + ", ".join(rand_json(rng, depth + 1) for _ in range(rng.randrange(4))) + "]"
    sep = rng.choice([", ", ",", ",\n  "])
    items = [json.dumps(rng.choice(WORDS)) + rng.choice([": ", ":"]) + rand_json(rng, depth + 1)
             for _ in range(rng.randrange(4))]
    return "{" + sep.join(items) + "}"


def gen_atom(rng, small=False):
    k = rng.randrange(20 if not small else 14)
    if k == 0:
        return rng.choice(WORDS)
    if k == 1:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
                       for _ in range(rng.randint(1, 12)))
    if k == 2:
        return "".join(rng.choice(WHITESPACE) for _ in range(rng.randint(1, 6)))
    if k == 3:
        return rng.choice(WORDS[:12] + [""]) + rng.choice(CONTRACTIONS)
    if k == 4:
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 14)))
    if k == 5:
        return rng.choice(OTHER_DIGITS)
    if k == 6:
        return "".join(rand_cp(rng, SCRIPT_RANGES[17:19] + [(0x3041, 0x30fa)]) for _ in range(rng.randint(1, 10)))
    if k == 7:
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 3)))
    if k == 8:
        base = rand_cp(rng, SCRIPT_RANGES)
        return base + "".join(rand_cp(rng, COMBINING) for _ in range(rng.randint(1, 4)))
    if k == 9:
        return "".join(rand_cp(rng, NEW_RANGES) for _ in range(rng.randint(1, 6)))
    if k == 10:
        return rng.choice(ADDED)
    if k == 11:
        return "".join(rng.choice(PUNCT) for _ in range(rng.randint(1, 5)))
    if k == 12:
        return rng.choice(NFC_CASES)
    if k == 13:
        return "".join(rand_cp(rng, SCRIPT_RANGES) for _ in range(rng.randint(1, 10)))
    if k == 14:
        return rng.choice(CODE)
    if k == 15:
        return rand_json(rng)
    if k == 16:  # any code point of any plane: unassigned, private use, controls, noncharacters
        return "".join(rand_cp(rng, [(0, 0x7f), (0x80, 0xffff), (0x10000, 0x10ffff), (0xe0000, 0xe01ef)])
                       for _ in range(rng.randint(1, 4)))
    if k == 17:
        return rng.choice(["/", "//", "a/b", "/\n", "./", "../x/", "C:\\dir\\f.txt", "?\r\n", "!!\n\n"])
    if k == 18:  # long runs (the heap merge path, long whitespace pre-tokens)
        unit = rng.choice(["a", " ", "ab", "\n", "!", "1", "\u4e2d", "\u00e9", " \n", "=", "\U0001f600", "ha"])
        return unit * rng.randint(20, 600)
    return rng.choice(["Ġ", "Ċ", "ĠĠ", "âĢĻ", "\x00", "\x7f", "\ufffd", "\U0010ffff", "\ue000", "\uffff"])


def gen_string(rng):
    n = rng.choice([1, 1, 2, 3, 4, 5, 8, 12, 20])
    seps = ["", "", " ", "\n", "\r\n", "  ", "\t"]
    return "".join(gen_atom(rng) + rng.choice(seps) for _ in range(n))


def edge_cases():
    cases = ["", " ", "  ", "   ", "\n", "\r", "\r\n", "\n\n", " \n", "\n ", " \n ", "a", "a ", " a", "a  b",
             "a\n\nb", "a \n\n b", "\t", "\t\t", " \t", "\t ", "a\r\n\r\nb", "\r\n\r\n", " \r\n", "\r \n",
             "'s", "'S", "'\u017f", "\u017f", "don't", "DON'T", "I'M", "x'\u017f", "  'll", "it'", "'", "''",
             "we'll'd", "a'sb", "1's", "\u2019s", "hello world", "Hello, World!", "  leading", "trailing  ",
             "x" * 300, "x" * 5000, " " * 1000, " " * 1000 + "a", "\n" * 500, "!" * 400, "1" * 50,
             "\u4e2d" * 2000, "ab" * 3000, "\U0001f600" * 200, "12", "123", "1234", "12345678901234",
             "3.14159", "1,000,000", "\u0661\u0662\u0663\u0664", "\u00bd\u00be", "x/y/z", "a//\n", "/\n\n",
             "...\r\n\r\n", "?\n\r", "<|im_end|>", "<|im_end|><|im_end|>", "<|im_end|x", "<<|im_end|>",
             "<|im_start|>", "<|im_start|>user\nhi<|im_end|>\n", "<think>", "</think>\n\n",
             "<think>\n\n</think>\n\n", "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "<|endoftext|>",
             "<|start|>user<|message|>hi<|end|>", "<|channel|>analysis<|message|>", "<|return|>", "<|call|>",
             "<|constrain|>json", " <|im_end|> ", "\n<|im_end|>\n", "<|im_end", "|>", "<", "<|",
             "\u00a0", "\u00a0\u00a0a", "\u3000", "\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\u200b",
             "\ufeff", "a\u0301", "e\u0301\u0323", "\uac00", "\u1100\u1161", "\u212b", "\u0344", "\ufb01",
             "\u01c5", "\u00df", "\u1e9e", "\u0130", "\u0131", "Ġ", "Ċ", "ĠĠ", "\x00", "\x01\x02", "\x7f",
             "\ufffd", "\U0010ffff", "\ue000", "\uffff", "\U0001f600", "\U0001f468\u200d\U0001f469\u200d\U0001f467",
             "\U0001f1fa\U0001f1f8", "1\ufe0f\u20e3", "\u0915\u094d\u0937", "\u0e01\u0e33", "\u05e9\u05c1\u05b8",
             "HTTPServer", "camelCaseWord", "ALLCAPS", "\u01c5emal", "\u02b0ello", "A\u0301B\u0301", "aB",
             "Ab'S", "AB'S", "ab'S", "\u1e9b\u0323", "\U00011f00\U00011f01", "\U00016d40abc", "\U0001e5d0",
             "\U000105c0\U000105c1", "\U00013460", "\U0002ebf0", "\U000323b0", "\U0001cc00", "\u0897",
             "x\u0300" * 40, "\u0300", " \u0300", "\n\u0300", "1\u0300", "'\u0300s", "\u200d", "a\u200db",
             "\u00e9" * 100, "e\u0301" * 100, "Ỳ", "ﬀ", "ǆ", "\u2160\u2161", "\U0001d400\U0001d41a",
             "\t\tif x:\n\t\t\treturn\n", "    def f():\n        pass\n", "}\n\n\n}", "\r\n\t\r\n", "\\n",
             "{\"a\": [1, 2.5, null, true], \"b\": \"\\u00e9\"}", "https://a.b/c?d=e#f", "C:\\x\\y",
             "\u0627\u0644\u0633\u0644\u0627\u0645 \u0639\u0644\u064a\u0643\u0645", "\u05e9\u05dc\u05d5\u05dd",
             "\u4f60\u597d\uff0c\u4e16\u754c\uff01", "\u3053\u3093\u306b\u3061\u306f", "\uc548\ub155\ud558\uc138\uc694",
             "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!", "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5"]
    return cases


# ---------------------------------------------------------------- real documents

def read_text(path, gz=False):
    with open(path, "rb") as f:
        data = f.read()
    if gz or path.endswith(".gz"):
        data = gzip.decompress(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def cap(text):
    b = text.encode("utf-8")
    if len(b) <= DOC_CAP:
        return text
    cut = b[:DOC_CAP].rfind(b"\n")
    if cut < DOC_CAP // 2:
        cut = DOC_CAP
    return b[:cut].decode("utf-8", errors="ignore")


def mo_text(path):
    try:
        with open(path, "rb") as f:
            t = gettext.GNUTranslations(f)
    except Exception:
        return None
    msgs = [v for k, v in sorted(t._catalog.items(), key=lambda kv: str(kv[0])) if k and isinstance(v, str)]
    return "\n".join(msgs) if msgs else None


def documents():
    """Returns [(source, text)], deterministic: sorted paths, fixed per-source limits."""
    docs, seen = [], set()

    def add(src, text, min_len=200):
        if text and len(text.encode("utf-8")) >= min_len and "\x00" not in text[:4096]:
            text = cap(text)
            if text not in seen:  # symlinked man pages and catalogs repeat
                seen.add(text)
                docs.append((src, text))

    # Translated man pages: a few per language.
    per_lang = {}
    for p in sorted(glob.glob("/usr/share/man/*/man?/*.gz")):
        lang = p.split("/")[4]
        if lang.startswith("man") or per_lang.get(lang, 0) >= 8:
            continue
        t = read_text(p)
        if t:
            per_lang[lang] = per_lang.get(lang, 0) + 1
            add(p, t)
    # Message catalogs: the largest catalog of each locale.
    by_locale = {}
    for p in sorted(glob.glob("/usr/share/locale/*/LC_MESSAGES/*.mo")):
        loc = p.split("/")[4]
        size = os.path.getsize(p)
        if size > by_locale.get(loc, ("", 0))[1]:
            by_locale[loc] = (p, size)
    for loc in sorted(by_locale):
        add(by_locale[loc][0], mo_text(by_locale[loc][0]))
    # Vim tutors in many languages (UTF-8 versions).
    for p in sorted(glob.glob("/usr/share/vim/vim90/tutor/tutor*.utf-8")):
        add(p, read_text(p))
    # English prose: licences, package READMEs.
    for p in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(p):
            add(p, read_text(p))
    readmes = sorted(glob.glob("/usr/share/doc/*/README*"))
    for p in readmes[::6][:40]:
        add(p, read_text(p))
    # Code: Go sources with non-ASCII text, Python stdlib modules.
    gos = [p for p in sorted(glob.glob("/usr/local/go/src/*/*_test.go") + glob.glob("/usr/local/go/test/*.go"))]
    n = 0
    for p in gos:
        t = read_text(p)
        if t and any(ord(c) > 127 for c in t) and n < 30:
            add(p, t)
            n += 1
    for p in sorted(glob.glob("/usr/lib/python3.11/*.py"))[::8][:25]:
        add(p, read_text(p))
    # The models' own text.
    # (the first two models only: the corpus predates the others and stays as it was)
    for p in sorted(glob.glob(os.path.join(ROOT, "testdata", "models", "*", "tokenizer_config.json"))):
        if p.split(os.sep)[-2] not in ("qwen3", "gptoss"):
            continue
        add(os.path.relpath(p, ROOT), read_text(p))
    return docs


# ---------------------------------------------------------------- output

def gzip_over(rel):
    """The shared corpus and the first two models' shared-set ids keep the 5 MB rule; every other
    per-model file is compressed from 256 KiB."""
    parts = rel.split(os.sep)
    if len(parts) == 1 or (parts[0] in ("qwen3", "gptoss") and parts[1].split(".")[0] in ("fuzz", "edge", "docs", "mixed")
                           and ".ids." in parts[1]):
        return GZIP_OVER
    return 256 * 1024


def write_lines(name, items):
    data = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in items).encode("utf-8")
    for stale in (name, name + ".gz"):
        if os.path.exists(os.path.join(OUT, stale)):
            os.remove(os.path.join(OUT, stale))
    if len(data) > gzip_over(name):
        name += ".gz"
        with open(os.path.join(OUT, name), "wb") as f:
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as z:
                z.write(data)
    else:
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    return name


def mixed_text(rng, docs, fuzz):
    parts, size = [], 0
    while size < MIXED_SIZE:
        if rng.random() < 0.6:
            t = rng.choice(docs)[1]
            i = rng.randrange(max(1, len(t) - 2000))
            piece = t[i:i + rng.randint(200, 2000)]
        else:
            piece = rng.choice(fuzz)
        piece += rng.choice(["\n", "\n\n", " ", ""])
        parts.append(piece)
        size += len(piece.encode("utf-8"))
    b = "".join(parts).encode("utf-8")[:MIXED_SIZE]
    return b.decode("utf-8", errors="ignore")


def run_oracle(model, src_name, out_name, whole=False):
    src = os.path.join(OUT, src_name)
    with open(src, "rb") as f:
        data = f.read()
    if src_name.endswith(".gz"):
        data = gzip.decompress(data)
    if whole:  # one text: the raw file
        data = (json.dumps(data.decode("utf-8"), ensure_ascii=False) + "\n").encode("utf-8")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenize.js")
    res = subprocess.run(["node", script, MODELS[model]], input=data, capture_output=True, check=True)
    out = res.stdout
    if out.count(b"\n") != data.count(b"\n"):
        sys.exit(f"oracle: {model} {src_name}: line count mismatch")
    os.makedirs(os.path.join(OUT, model), exist_ok=True)
    name = os.path.join(model, out_name)
    for stale in (name, name + ".gz"):
        if os.path.exists(os.path.join(OUT, stale)):
            os.remove(os.path.join(OUT, stale))
    if len(out) > gzip_over(name):
        name += ".gz"
        with open(os.path.join(OUT, name), "wb") as f:
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as z:
                z.write(out)
    else:
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(out)
    print(f"wrote {name}")


def read_model(model):
    with open(MODELS[model], "rb") as f:
        data = f.read()
    if MODELS[model].endswith(".gz"):
        data = gzip.decompress(data)
    return json.loads(data)


def added_cases(model, rng):
    """Strings around each added token of model: alone, inside text, cut short, doubled, in a mix."""
    tj = read_model(model)
    tokens = [t["content"] for t in tj["added_tokens"]]
    cases = []
    for t in tokens:
        k = rng.randrange(1, len(t)) if len(t) > 1 else 1
        cases += [t, rng.choice(WORDS) + t + rng.choice(WORDS), t[:k] + " " + t[k:], t + t + "\n" + t[:k]]
    for _ in range(ADDED_COUNT):
        parts = []
        for _ in range(rng.randint(1, 8)):
            r = rng.random()
            if r < 0.4:
                parts.append(rng.choice(tokens))
            elif r < 0.5:
                t = rng.choice(tokens)
                parts.append(t[:rng.randrange(1, len(t) + 1)])
            else:
                parts.append(gen_atom(rng))
            parts.append(rng.choice(["", "", " ", "\n", "\n\n", "  "]))
        cases.append("".join(parts))
    return cases


def decode_cases(model, rng):
    """Random id arrays: any id of the vocab, added tokens, and runs of byte tokens (cut UTF-8)."""
    tj = read_model(model)
    vocab = tj["model"]["vocab"]
    n = max(max(vocab.values()), max([t["id"] for t in tj["added_tokens"]] or [0])) + 1
    added = [t["id"] for t in tj["added_tokens"]]
    alpha = [vocab[c] for c in byte_alphabet() if c in vocab]
    out = []
    for _ in range(DECODE_COUNT):
        ids = []
        for _ in range(rng.randint(1, 16)):
            r = rng.random()
            if r < 0.5:
                ids.append(rng.randrange(n))
            elif r < 0.6 and added:
                ids.append(rng.choice(added))
            else:
                ids.append(rng.choice(alpha))
        out.append(ids)
    return out


def byte_alphabet():
    """The 256 characters of the GPT-2 byte-level alphabet."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs, k = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + k)
            k += 1
    return [chr(c) for c in cs]


def write_out(rel, out):
    for stale in (rel, rel + ".gz"):
        if os.path.exists(os.path.join(OUT, stale)):
            os.remove(os.path.join(OUT, stale))
    if len(out) > gzip_over(rel):
        rel += ".gz"
        with open(os.path.join(OUT, rel), "wb") as f:
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as z:
                z.write(out)
    else:
        with open(os.path.join(OUT, rel), "wb") as f:
            f.write(out)
    print(f"wrote {rel}")


def oracle(model, data, *flags):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenize.js")
    res = subprocess.run(["node", script, MODELS[model], *flags], input=data, capture_output=True, check=True)
    if res.stdout.count(b"\n") != data.count(b"\n"):
        sys.exit(f"oracle: {model} {flags}: line count mismatch")
    return res.stdout


def read_set(name):
    path = os.path.join(OUT, name)
    if not os.path.exists(path):
        path += ".gz"
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if path.endswith(".gz") else data


def family_sets(model):
    """The per-model sets: added strings, decode arrays, decoded texts, special-token ids."""
    rng = random.Random(f"{SEED}-{model}")
    os.makedirs(os.path.join(OUT, model), exist_ok=True)
    added = write_lines(os.path.join(model, "added.jsonl"), added_cases(model, rng))
    run_oracle(model, added, "added.ids.jsonl")
    arrays = decode_cases(model, rng)
    data = "".join(json.dumps(a) + "\n" for a in arrays).encode("utf-8")
    write_out(os.path.join(model, "decode.jsonl"), data)
    write_out(os.path.join(model, "decode.decoded.jsonl"), oracle(model, data, "--decode"))
    for s in ("fuzz", "edge", "docs", "added"):
        src = s + ".jsonl" if s != "added" else os.path.join(model, "added.jsonl")
        texts = [json.loads(l) for l in read_set(src).decode("utf-8").split("\n") if l]
        ids = read_set(os.path.join(model, s + ".ids.jsonl"))
        decoded = oracle(model, ids, "--decode").decode("utf-8").split("\n")
        diff = [json.dumps([i + 1, json.loads(d)], ensure_ascii=False)
                for i, (t, d) in enumerate(zip(texts, decoded)) if json.loads(d) != t]
        write_out(os.path.join(model, s + ".decoded.jsonl"), "".join(l + "\n" for l in diff).encode("utf-8"))
    write_out(os.path.join(model, "edge.special.ids.jsonl"), oracle(model, read_set("edge.jsonl"), "--special"))


def main():
    os.makedirs(OUT, exist_ok=True)
    if "--keep-corpus" in sys.argv:  # ids only: the committed corpus as it is (parallel runs)
        names = {"fuzz": "fuzz.jsonl.gz", "edge": "edge.jsonl", "docs": "docs.jsonl"}
    else:
        rng = random.Random(SEED)
        fuzz = [gen_string(rng) for _ in range(FUZZ_COUNT)]
        names = {"fuzz": write_lines("fuzz.jsonl", fuzz), "edge": write_lines("edge.jsonl", edge_cases())}
        docs = documents()
        names["docs"] = write_lines("docs.jsonl", [t for _, t in docs])
        with open(os.path.join(OUT, "docs.sources.txt"), "w", encoding="utf-8", newline="\n") as f:
            for i, (src, t) in enumerate(docs):
                f.write(f"{i + 1}\t{len(t.encode('utf-8'))}\t{src}\n")
        mixed = mixed_text(random.Random(SEED + 1), docs, fuzz)
        with open(os.path.join(OUT, "mixed.txt"), "wb") as f:
            f.write(mixed.encode("utf-8"))
        print(f"fuzz {len(fuzz)}, edge {len(edge_cases())}, docs {len(docs)}, mixed {len(mixed.encode('utf-8'))} bytes")
    if "--ids" in sys.argv:
        only = [a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--only=")]
        for model in MODELS:
            if only and model not in only[0]:
                continue
            if "--sets-only" not in sys.argv:  # --sets-only: only the per-model sets
                for s in ("fuzz", "edge", "docs"):
                    run_oracle(model, names[s], f"{s}.ids.jsonl")
                run_oracle(model, "mixed.txt", "mixed.ids.jsonl", whole=True)
            family_sets(model)


if __name__ == "__main__":
    main()
