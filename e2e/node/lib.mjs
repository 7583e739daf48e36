// Shared plumbing of the Node e2e scripts: configuration from the environment, a loopback-only
// fetch guard, assertions, a tiny sequential runner and the stream invariants of
// docs/FACTS-clients.md. Results: "ok - name" lines on stdout, failures on stderr, exit code 1
// when anything failed. Run by e2e/node_test.go; see e2e/doc.go.

export const baseURL = requireEnv('OPENAI_BASE_URL');
export const apiKey = process.env.OPENAI_API_KEY || 'test';
export const model = process.env.STITCH_MODEL || 'qwen3';

function requireEnv(name) {
  const v = process.env[name];
  if (!v) {
    // Never fall back to the SDK default (api.openai.com).
    process.stderr.write(`${name} is not set; these scripts only talk to a local stitch\n`);
    process.exit(2);
  }
  return v;
}

// Every request must stay on loopback: wrap fetch so that anything else (an SDK default URL,
// a tracing exporter) fails loudly instead of leaving the machine.
const offLoopback = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  if (!isLoopback(url.hostname)) {
    offLoopback.push(url.origin);
    return Promise.reject(new Error(`e2e: blocked request to non-loopback ${url.origin}`));
  }
  return realFetch(input, init);
};

function isLoopback(host) {
  return host === 'localhost' || host === '[::1]' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

if (!isLoopback(new URL(baseURL).hostname)) {
  process.stderr.write(`OPENAI_BASE_URL ${baseURL} is not a loopback address\n`);
  process.exit(2);
}

export class AssertionError extends Error {}

export function assert(cond, msg) {
  if (!cond) throw new AssertionError(msg);
}

export function assertEq(got, want, what) {
  if (got !== want) {
    throw new AssertionError(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
}

// expectAPIError runs fn, which must reject with an APIError of the given status and fields.
export async function expectAPIError(fn, { status, type, code, param, cls }) {
  let err;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assert(err, `want an error with status ${status}, got success`);
  if (cls) assert(err instanceof cls, `error ${err?.constructor?.name}: ${err?.message}, want ${cls.name}`);
  assertEq(err.status, status, 'error status');
  if (type !== undefined) assertEq(err.type, type, 'error type');
  if (code !== undefined) assertEq(err.code, code, 'error code');
  if (param !== undefined) assertEq(err.param, param, 'error param');
  return err;
}

// runTests runs the named async tests in order and exits 1 if any failed (or if anything
// tried to leave loopback).
export async function runTests(suite, tests) {
  let failed = 0;
  for (const [name, fn] of Object.entries(tests)) {
    const start = Date.now();
    try {
      await fn();
      process.stdout.write(`ok - ${suite}: ${name} (${Date.now() - start} ms)\n`);
    } catch (e) {
      failed++;
      const detail = e instanceof AssertionError ? e.message : (e?.stack || String(e));
      process.stderr.write(`not ok - ${suite}: ${name}: ${detail}\n`);
      if (e?.error) process.stderr.write(`  body: ${JSON.stringify(e.error)}\n`);
    }
  }
  if (offLoopback.length > 0) {
    failed++;
    process.stderr.write(`not ok - ${suite}: requests left loopback: ${[...new Set(offLoopback)].join(', ')}\n`);
  }
  const total = Object.keys(tests).length;
  process.stdout.write(`${suite}: ${total - failed} passed, ${failed} failed\n`);
  process.exit(failed > 0 ? 1 : 0);
}

// outputText concatenates the output_text parts of a response's message items.
export function outputText(response) {
  let s = '';
  for (const item of response.output ?? []) {
    if (item.type !== 'message') continue;
    for (const c of item.content ?? []) if (c.type === 'output_text') s += c.text;
  }
  return s;
}

// checkStream verifies the stream rules on the events an SDK yielded and returns the terminal
// response: sequence numbers from 0, created then in_progress first, every item added before
// its deltas and done before the end, content parts added before text deltas, ids stable,
// a terminal event carrying the full response last.
export function checkStream(events) {
  const problems = [];
  const bad = (msg) => problems.push(msg);
  assert(events.length >= 3, `stream has ${events.length} events`);
  events.forEach((ev, i) => {
    if (ev.sequence_number !== i) bad(`event ${i} (${ev.type}): sequence_number ${ev.sequence_number}`);
    if ('error' in ev && ev.type !== 'error') bad(`event ${i} (${ev.type}): top-level "error" key`);
  });
  if (events[0].type !== 'response.created' || events[1].type !== 'response.in_progress') {
    bad(`stream starts with ${events[0].type}, ${events[1].type}`);
  }
  const terminal = events[events.length - 1];
  const terminals = ['response.completed', 'response.incomplete', 'response.failed'];
  assert(terminals.includes(terminal.type), `last event is ${terminal.type}`);
  const final = terminal.response;
  assert(final && Array.isArray(final.output), `${terminal.type} carries no response`);
  const responseID = events[0].response?.id;
  const items = [];
  events.forEach((ev, i) => {
    const where = `event ${i} (${ev.type})`;
    if (ev.response && ev.response.id !== responseID) bad(`${where}: response id ${ev.response.id} != ${responseID}`);
    if (i < events.length - 1 && terminals.includes(ev.type)) bad(`${where}: terminal event before the end`);
    if (ev.type === 'response.output_item.added') {
      if (ev.output_index !== items.length) bad(`${where}: output_index ${ev.output_index}, want ${items.length}`);
      items.push({ id: ev.item.id, type: ev.item.type, done: false, parts: new Map(), text: new Map(), args: '' });
      return;
    }
    if (typeof ev.output_index !== 'number') return;
    const it = items[ev.output_index];
    if (!it) return bad(`${where}: output_index ${ev.output_index} before output_item.added`);
    if (it.done) return bad(`${where}: after output_item.done of its item`);
    if ('item_id' in ev && ev.item_id !== it.id) bad(`${where}: item_id ${ev.item_id}, want ${it.id}`);
    switch (ev.type) {
      case 'response.output_item.done':
        if (ev.item.id !== it.id) bad(`${where}: item id ${ev.item.id}, want ${it.id}`);
        it.done = true;
        break;
      case 'response.content_part.added':
        it.parts.set(ev.content_index, ev.part.type);
        it.text.set(ev.content_index, '');
        break;
      case 'response.output_text.delta':
      case 'response.reasoning_text.delta':
        if (!it.parts.has(ev.content_index)) bad(`${where}: delta before content_part.added`);
        it.text.set(ev.content_index, (it.text.get(ev.content_index) ?? '') + ev.delta);
        break;
      case 'response.output_text.done':
      case 'response.reasoning_text.done':
        if (ev.text !== it.text.get(ev.content_index)) bad(`${where}: text differs from the deltas`);
        break;
      case 'response.function_call_arguments.delta':
        it.args += ev.delta;
        break;
      case 'response.function_call_arguments.done':
        if (ev.arguments !== it.args) bad(`${where}: arguments differ from the deltas`);
        break;
    }
  });
  items.forEach((it, i) => {
    if (!it.done) bad(`item ${i} (${it.type}) has no output_item.done`);
    const out = final.output[i];
    if (!out || out.id !== it.id || out.type !== it.type) bad(`final output[${i}] is not the streamed ${it.type} ${it.id}`);
  });
  if (final.output.length !== items.length) bad(`final output has ${final.output.length} items, stream added ${items.length}`);
  assert(problems.length === 0, `stream invariants:\n  ${problems.join('\n  ')}`);
  return { terminal: terminal.type, response: final };
}
