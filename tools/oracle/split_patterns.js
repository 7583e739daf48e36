#!/usr/bin/env node
// split_patterns.js runs the Split pre-tokenizers of testdata/pretok/patterns.json (any pattern,
// behavior and invert flag) through the real Rust tokenizers (npm @anush008/tokenizers, Oniguruma)
// over the pre-tokenizer corpora, and writes, per pattern and corpus, the SHA-256 of the pieces of
// every chunk of 1000 lines: testdata/pretok/patterns.golden.json. A line's pieces are written as
// "start:end" byte offsets (UTF-8) joined by ","; the lines of a chunk are joined by "\n".
// render/bpe's TestSplitPatternsGolden computes the same digests with the general engine. Run from
// the repository root:
//
//	node tools/oracle/split_patterns.js            # writes testdata/pretok/patterns.golden.json
//	node tools/oracle/split_patterns.js --dump NAME CORPUS   # the pieces themselves, for debugging
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const path = require('path');
const crypto = require('crypto');
const root = path.join(__dirname, '..', '..');
const tk = require('./node_modules/@anush008/tokenizers');

const CHUNK = 1000;
const CORPORA = ['edge', 'alphabet', 'corpus'];

function preTokenizer(p) {
  const pattern = p.pattern_string !== undefined ? { String: p.pattern_string } : { Regex: p.pattern };
  const j = {
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: { type: 'Split', pattern, behavior: p.behavior, invert: !!p.invert },
    post_processor: null, decoder: null,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab: {}, merges: [] },
  };
  return tk.Tokenizer.fromString(JSON.stringify(j)).getPreTokenizer();
}

function readLines(file) {
  const data = zlib.gunzipSync(fs.readFileSync(file)).toString('utf8');
  return data.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
}

// pieces returns "s:e,s:e,..." in UTF-8 byte offsets (the binding reports code points).
function pieces(pt, s) {
  const byteAt = [0];
  for (const ch of s) byteAt.push(byteAt[byteAt.length - 1] + Buffer.byteLength(ch, 'utf8'));
  return pt.preTokenizeString(s).map(([, [a, b]]) => `${byteAt[a]}:${byteAt[b]}`).join(',');
}

const patterns = JSON.parse(fs.readFileSync(path.join(root, 'testdata/pretok/patterns.json'), 'utf8'));
const corpora = Object.fromEntries(CORPORA.map((c) => [c, readLines(path.join(root, `testdata/pretok/${c}.jsonl.gz`))]));
if (process.argv[2] === '--dump') {
  const p = patterns.find((x) => x.name === process.argv[3]);
  const pt = preTokenizer(p);
  for (const s of corpora[process.argv[4]]) process.stdout.write(pieces(pt, s) + '\n');
  process.exit(0);
}
const out = {};
for (const p of patterns) {
  const pt = preTokenizer(p);
  out[p.name] = {};
  for (const c of CORPORA) {
    const lines = corpora[c];
    const digests = [];
    for (let i = 0; i < lines.length; i += CHUNK) {
      const text = lines.slice(i, i + CHUNK).map((s) => pieces(pt, s)).join('\n');
      digests.push(crypto.createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16));
    }
    out[p.name][c] = digests;
  }
  console.error(`${p.name}: done`);
}
fs.writeFileSync(path.join(root, 'testdata/pretok/patterns.golden.json'), JSON.stringify(out, null, 1) + '\n');
