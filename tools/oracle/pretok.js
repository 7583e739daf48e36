// pretok.js runs JSON-lines corpora of strings through the real Rust tokenizers' Split pre-tokenizer
// (npm @anush008/tokenizers, Oniguruma) with the split patterns of the Qwen3 and gpt-oss tokenizer.json
// files, and writes, per input line, the end byte offsets (UTF-8) of the pieces:
//   {"qwen":[e1,e2,...],"o200k":[...],"gpt2":[...]}
// ("gpt2" is a ByteLevel pre-tokenizer with use_regex=true, which splits with the GPT-2 pattern.)
// Run from the repository root (inputs come from `go run ./tools/unicodegen -corpus`):
//
//	node tools/oracle/pretok.js testdata/pretok/corpus.jsonl.gz testdata/pretok/corpus.golden.jsonl.gz
//	node tools/oracle/pretok.js testdata/pretok/edge.jsonl.gz testdata/pretok/edge.golden.jsonl.gz
//
// The binding reports offsets in code points (OffsetType::Char) of the original string; they are
// mapped to UTF-8 byte offsets, and the pieces are checked to be contiguous and to cover the input.
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const path = require('path');
const root = path.join(__dirname, '..', '..'); // repository root
const tk = require('./node_modules/@anush008/tokenizers');

function splitPattern(tokenizerJSON) {
  const pt = JSON.parse(tokenizerJSON).pre_tokenizer;
  const split = (pt.type === 'Sequence' ? pt.pretokenizers : [pt]).find((p) => p.type === 'Split');
  return split.pattern.Regex;
}

function preTokenizer(pattern) {
  const j = {
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
    post_processor: null, decoder: null,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab: {}, merges: [] },
  };
  return tk.Tokenizer.fromString(JSON.stringify(j)).getPreTokenizer();
}

function readLines(path) {
  let data = fs.readFileSync(path);
  if (path.endsWith('.gz')) data = zlib.gunzipSync(data);
  // Split on "\n" only: JSON escapes every other line terminator inside strings.
  return data.toString('utf8').split('\n').filter((l) => l !== '');
}

function ends(pt, s) {
  // byteAt[k] is the UTF-8 offset of code point k of s.
  const byteAt = [0];
  for (const ch of s) byteAt.push(byteAt[byteAt.length - 1] + Buffer.byteLength(ch, 'utf8'));
  const out = [];
  let chars = 0;
  for (const [, [start, end]] of pt.preTokenizeString(s)) {
    if (start !== chars) throw new Error(`gap before char ${start} in ${JSON.stringify(s)}`);
    chars = end;
    out.push(byteAt[end]);
  }
  if (chars !== byteAt.length - 1) throw new Error(`pieces do not cover ${JSON.stringify(s)}`);
  return out;
}

const [inPath, outPath] = process.argv.slice(2);
const qwen = preTokenizer(splitPattern(fs.readFileSync(path.join(root, 'testdata/models/qwen3/tokenizer.json'), 'utf8')));
const o200k = preTokenizer(splitPattern(zlib.gunzipSync(fs.readFileSync(path.join(root, 'testdata/models/gptoss/tokenizer.json.gz'))).toString('utf8')));
const gpt2 = tk.byteLevelPreTokenizer(false, true);
const lines = [];
for (const line of readLines(inPath)) {
  const s = JSON.parse(line);
  lines.push(JSON.stringify({ qwen: ends(qwen, s), o200k: ends(o200k, s), gpt2: ends(gpt2, s) }));
}
let out = Buffer.from(lines.join('\n') + '\n', 'utf8');
if (outPath.endsWith('.gz')) out = zlib.gzipSync(out, { level: 9 });
fs.writeFileSync(outPath, out);
console.error(`${outPath}: ${lines.length} lines`);
