#!/usr/bin/env node
// Reference ids from the real Rust tokenizers (npm @anush008/tokenizers 0.6.0 = tokenizers 0.22.2).
//
// Usage: node tokenize.js TOKENIZER_JSON[.gz] [--decode | --special] < in.jsonl > out.jsonl
//
// Encode (default): each input line is a JSON string; each output line is the JSON array of its ids,
// encoded with add_special_tokens=false, in input order. Decode: each input line is a JSON array of
// ids; each output line is the JSON string of decode(ids, skip_special_tokens=false). --special encodes
// with add_special_tokens=true (the post-processor's template applied).
// Inputs are never re-serialized: output line N belongs to input line N, and that is the only key.
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const readline = require('readline');
const { Tokenizer } = require('@anush008/tokenizers');

function loadTokenizer(path) {
  let data = fs.readFileSync(path);
  if (path.endsWith('.gz')) data = zlib.gunzipSync(data);
  return Tokenizer.fromString(data.toString('utf8'));
}

async function main() {
  const args = process.argv.slice(2);
  const decode = args.includes('--decode');
  const special = args.includes('--special') || args.includes('--add-special-tokens');
  const files = args.filter((a) => !a.startsWith('--'));
  if (files.length !== 1) {
    process.stderr.write('usage: node tokenize.js TOKENIZER_JSON[.gz] [--decode | --special] < in.jsonl > out.jsonl\n');
    process.exit(2);
  }
  const tok = loadTokenizer(files[0]);
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  const batch = [];
  const out = [];
  const flush = async () => {
    if (batch.length === 0) return;
    if (decode) {
      const texts = await tok.decodeBatch(batch, false);
      for (const t of texts) out.push(JSON.stringify(t));
    } else {
      const encs = await tok.encodeBatch(batch, { addSpecialTokens: special });
      for (const e of encs) out.push(JSON.stringify(e.getIds()));
    }
    process.stdout.write(out.join('\n') + '\n');
    batch.length = 0;
    out.length = 0;
  };
  let lineNo = 0;
  for await (const line of rl) {
    lineNo++;
    let v;
    try {
      v = JSON.parse(line);
    } catch (err) {
      process.stderr.write(`line ${lineNo}: ${err.message}\n`);
      process.exit(1);
    }
    if (decode ? !Array.isArray(v) : typeof v !== 'string') {
      process.stderr.write(`line ${lineNo}: expected a JSON ${decode ? 'array' : 'string'}\n`);
      process.exit(1);
    }
    batch.push(v);
    if (batch.length >= 256) await flush();
  }
  await flush();
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  process.exit(1);
});
