#!/usr/bin/env node
// Measures the Rust tokenizers (npm @anush008/tokenizers 0.6.0) on the same text as the Go
// benchmarks (BenchmarkEncodeCold/Warm, BenchmarkLoad in render/bpe), single-threaded, so the Go
// numbers can be given as a ratio to Rust measured in the same run.
//
// Usage: node tools/oracle/bench_oracle.js [TEXT] [MODEL_JSON[.gz] ...]
//   defaults: testdata/tokenizer/mixed.txt, the Qwen3 and gpt-oss tokenizers under testdata/models.
// Prints, per model: load time, cold encode (first encode after load) and warm encode (median of 5
// repeats) as MB/s of wall time and of process CPU time; then the same text encoded as chunks of
// about 4 KiB cut at line ends (one encode call each, in order), because the Rust crate is much
// slower on one 1 MiB string than on many short ones.
'use strict';
process.env.RAYON_NUM_THREADS = '1';
process.env.TOKENIZERS_PARALLELISM = 'false';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { Tokenizer } = require('@anush008/tokenizers');

const root = path.join(__dirname, '..', '..');
const args = process.argv.slice(2);
const textPath = args[0] || path.join(root, 'testdata', 'tokenizer', 'mixed.txt');
const models = args.length > 1 ? args.slice(1) : [
  path.join(root, 'testdata', 'models', 'qwen3', 'tokenizer.json'),
  path.join(root, 'testdata', 'models', 'gptoss', 'tokenizer.json.gz'),
];

function cpuSeconds() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

async function timed(fn) {
  const w0 = process.hrtime.bigint();
  const c0 = cpuSeconds();
  const r = await fn();
  return { r, wall: Number(process.hrtime.bigint() - w0) / 1e9, cpu: cpuSeconds() - c0 };
}

async function main() {
  const text = fs.readFileSync(textPath, 'utf8');
  const mb = Buffer.byteLength(text, 'utf8') / 1e6;
  console.log(`text ${textPath}: ${(mb * 1e6).toFixed(0)} bytes`);
  for (const m of models) {
    let data = fs.readFileSync(m);
    if (m.endsWith('.gz')) data = zlib.gunzipSync(data);
    const json = data.toString('utf8');
    const load = await timed(async () => Tokenizer.fromString(json));
    const tok = load.r;
    const enc = () => tok.encode(text, null, { addSpecialTokens: false });
    const cold = await timed(enc);
    const warm = [];
    for (let i = 0; i < 5; i++) warm.push(await timed(enc));
    warm.sort((a, b) => a.wall - b.wall);
    const w = warm[2];
    const chunks = [];
    for (let i = 0; i < text.length;) {
      let j = text.indexOf('\n', i + 4096);
      j = j < 0 ? text.length : j + 1;
      chunks.push(text.slice(i, j));
      i = j;
    }
    const encChunks = async () => {
      let n = 0;
      for (const c of chunks) n += (await tok.encode(c, null, { addSpecialTokens: false })).getIds().length;
      return n;
    };
    const chunked = await timed(encChunks);
    console.log(`${path.basename(path.dirname(m))}: ids ${cold.r.getIds().length}; ` +
      `load ${(load.wall * 1000).toFixed(0)} ms (cpu ${(load.cpu * 1000).toFixed(0)} ms); ` +
      `cold ${(mb / cold.wall).toFixed(1)} MB/s (cpu ${(mb / cold.cpu).toFixed(1)}); ` +
      `warm ${(mb / w.wall).toFixed(1)} MB/s (cpu ${(mb / w.cpu).toFixed(1)}); ` +
      `${chunks.length} chunks ${(mb / chunked.wall).toFixed(1)} MB/s (cpu ${(mb / chunked.cpu).toFixed(1)})`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
