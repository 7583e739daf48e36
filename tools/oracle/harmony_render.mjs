// Renders the Harmony conversations of testdata/harmony/cases.json with openai_harmony — OpenAI's
// Rust crate compiled to WebAssembly (npm openai-harmony 0.4.0, built from openai/harmony on
// 2025-08-06) — exactly as vLLM calls it: render_conversation_for_completion(conversation,
// Role.ASSISTANT) with auto_drop_analysis on (HARMONY_GPT_OSS). Writes the ids and their decoded
// text next to each case.
//
// The crate downloads o200k_base.tiktoken; offline, harmony_vocab.py rebuilds it from gpt-oss's
// tokenizer.json and this script serves it (the crate checks its SHA-256 itself).
//
// Usage: node tools/oracle/harmony_render.mjs VOCAB testdata/harmony/cases.json testdata/harmony/golden.json
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const [vocabPath, casesPath, outPath] = process.argv.slice(2);
globalThis.fetch = async (input) => {
  const url = String(input instanceof Request ? input.url : input);
  let resp;
  if (url.startsWith('file:')) {
    resp = new Response(fs.readFileSync(fileURLToPath(url)), { headers: { 'content-type': 'application/wasm' } });
  } else if (url.endsWith('/o200k_base.tiktoken')) {
    resp = new Response(fs.readFileSync(vocabPath));
  } else {
    throw new Error('harmony_render: network disabled: ' + url);
  }
  Object.defineProperty(resp, 'url', { value: url }); // reqwest's wasm client parses it
  return resp;
};
const harmony = await import('openai-harmony');
const enc = await harmony.load_harmony_encoding('HarmonyGptOss');

const cases = JSON.parse(fs.readFileSync(casesPath, 'utf8'));
const out = [];
for (const c of cases) {
  const ids = Array.from(enc.renderConversationForCompletion({ messages: c.messages }, 'assistant', { auto_drop_analysis: true }));
  out.push({ name: c.name, ids, text: enc.decodeUtf8(Uint32Array.from(ids)) });
}
fs.writeFileSync(outPath, JSON.stringify(out, null, 0).replace(/\},\{"name"/g, '},\n{"name"') + '\n');
console.log(`${out.length} renders`);
