#!/usr/bin/env node
// Reference ids for the render golden suite: tokenizes each expected prompt text with the real Rust
// tokenizers (npm @anush008/tokenizers), add_special_tokens=false, as vLLM's chat path does.
//
// Usage: node tools/oracle/render_ids.js TOKENIZER_JSON < testdata/render/NAME.text.jsonl \
//            > testdata/render/NAME.ids.jsonl
//
// Input lines are {"name","text"} or {"name","error"} written by render_oracle.py (ASCII-only JSON).
// Output lines are {"name","ids"} (errors are skipped). Only ids and names are written: the inputs
// are never re-serialized by JavaScript (it would respell numbers).
'use strict';
const fs = require('fs');
const { Tokenizer } = require('@anush008/tokenizers');

async function main() {
  const [path] = process.argv.slice(2);
  if (!path) {
    process.stderr.write('usage: node render_ids.js TOKENIZER_JSON < in.text.jsonl > out.ids.jsonl\n');
    process.exit(2);
  }
  const tok = Tokenizer.fromString(fs.readFileSync(path, 'utf8'));
  const input = fs.readFileSync(0, 'utf8');
  const out = [];
  for (const line of input.split('\n')) {
    if (line === '') continue;
    const c = JSON.parse(line);
    if (typeof c.text !== 'string') continue;
    const enc = await tok.encode(c.text, null, { addSpecialTokens: false });
    out.push(JSON.stringify({ name: c.name, ids: Array.from(enc.getIds()) }));
  }
  process.stdout.write(out.join('\n') + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
