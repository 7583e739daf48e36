// Renders the Harmony conversations of testdata/harmony/cases.json with openai_harmony — OpenAI's
// Rust crate compiled to WebAssembly (npm openai-harmony 0.4.0, built from openai/harmony on
// 2025-08-06) — exactly as vLLM calls it: render_conversation_for_completion(conversation,
// Role.ASSISTANT) with auto_drop_analysis on (HARMONY_GPT_OSS). Writes the ids and their decoded
// text next to each case.
//
// The crate downloads o200k_base.tiktoken; offline, harmony_vocab.py rebuilds it from gpt-oss's
// tokenizer.json and this script serves it (the crate checks its SHA-256 itself).
//
// A record with "turns" (testdata/harmony/chains.json) is a previous_response_id chain: each turn's
// conversation (the messages vLLM's message store gives it) is rendered the same way.
//
// openai-harmony 0.4.0 predates harmony's fix 8a4645f (2025-08-08, in v0.0.8) "Fix tokenization of
// <|constrain|> content type in rendering": it encodes a content type as ordinary text, where
// harmony since renders " " as text, then <|constrain|> as its special token, then the rest as
// text. A message whose content type starts with <|constrain|> (a call as the model wrote it, which
// vLLM's message store keeps) is therefore rendered without its content type by the wasm build,
// and the fix's pieces are put in before its <|message|>, each encoded by the same build.
//
// Usage: node tools/oracle/harmony_render.mjs VOCAB testdata/harmony/cases.json testdata/harmony/golden.json
//        node tools/oracle/harmony_render.mjs VOCAB testdata/harmony/chains.json testdata/harmony/chains_golden.json
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

const START = 200006, MESSAGE = 200008, CONSTRAIN = 200003, MARKER = '<|constrain|>';

function check(ok, what) {
  if (!ok) throw new Error('harmony_render: ' + what);
}

function render(messages) {
  const fixes = [];
  const plain = messages.map((m, i) => {
    if (typeof m.content_type !== 'string' || !m.content_type.startsWith(MARKER)) return m;
    fixes.push([i, m.content_type.slice(MARKER.length)]);
    const { content_type: _, ...rest } = m;
    return rest;
  });
  const ids = Array.from(enc.renderConversationForCompletion({ messages: plain }, 'assistant', { auto_drop_analysis: true }));
  if (fixes.length === 0) return ids;
  // The messages harmony rendered: auto_drop_analysis drops analysis before the first final when
  // the last assistant message is final. Each rendered message starts with <|start|> (text never
  // encodes to it), then the generation prompt's.
  const last = messages.filter((m) => m.role === 'assistant').at(-1);
  const firstFinal = messages.findIndex((m) => m.channel === 'final');
  const drop = last !== undefined && last.channel === 'final' && firstFinal >= 0;
  const kept = messages.map((_, i) => i).filter((i) => !(drop && i < firstFinal && messages[i].channel === 'analysis'));
  const starts = ids.flatMap((id, k) => (id === START ? [k] : []));
  check(starts.length === kept.length + 1, `${starts.length} messages rendered, ${kept.length + 1} expected`);
  for (const [i, rest] of fixes.reverse()) {
    const at = ids.indexOf(MESSAGE, starts[kept.indexOf(i)]);
    check(kept.includes(i) && at > 0, `message ${i} not found`);
    const piece = [...enc.encode(' ', []), CONSTRAIN, ...(rest === '' ? [] : enc.encode(rest, []))];
    ids.splice(at, 0, ...piece);
  }
  return ids;
}

function rendered(messages) {
  const ids = render(messages);
  return { ids, text: enc.decodeUtf8(Uint32Array.from(ids)) };
}

const cases = JSON.parse(fs.readFileSync(casesPath, 'utf8'));
const out = [];
let n = 0;
for (const c of cases) {
  if (c.turns !== undefined) {
    out.push({ name: c.name, turns: c.turns.map((t) => rendered(t.messages)) });
    n += c.turns.length;
  } else {
    out.push({ name: c.name, ...rendered(c.messages) });
    n++;
  }
}
fs.writeFileSync(outPath, JSON.stringify(out, null, 0).replace(/\},\{"name"/g, '},\n{"name"') + '\n');
console.log(`${n} renders`);
