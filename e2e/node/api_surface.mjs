// e2e: the Responses API surface of issue 18 with the official `openai` npm SDK (see
// e2e/node_surface_test.go): allowed_tools, max_tool_calls, history checks, input_tokens,
// input_items' shape, refused fields, streamed retrieve of a foreground response and unserved
// routes (background and conversations: background.mjs).
import { apiKey, assert, assertEq, baseURL, expectAPIError, model, runTests } from './lib.mjs';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });

const fn = (name) => ({ type: 'function', name, strict: false, parameters: { type: 'object', properties: { location: { type: 'string' } } } });
const calls = (r) => r.output.filter((it) => it.type === 'function_call').map((it) => it.name);

await runTests('api_surface', {
  'allowed_tools restricts the offered and called tools': async () => {
    for (const mode of ['auto', 'required']) {
      const r = await client.responses.create({
        model, tools: [fn('get_weather'), fn('get_time')], input: 'Use get_weather for Paris.',
        tool_choice: { type: 'allowed_tools', mode, tools: [{ type: 'function', name: 'get_time' }] },
      });
      assertEq(JSON.stringify(calls(r)), '["get_time"]', `mode ${mode}: calls`);
    }
  },

  'max_tool_calls 0 drops the call': async () => {
    const r = await client.responses.create({ model, tools: [fn('get_weather')], max_tool_calls: 0, input: 'Weather in Rome? Use get_weather.' });
    assertEq(calls(r).length, 0, 'calls');
  },

  'history checks answer as OpenAI': async () => {
    const r1 = await client.responses.create({ model, tools: [fn('get_weather')], input: 'Weather in Oslo? Use get_weather.' });
    const call = r1.output.find((it) => it.type === 'function_call');
    assert(call, 'no call');
    const e1 = await expectAPIError(() => client.responses.create({
      model, tools: [fn('get_weather')], previous_response_id: r1.id,
      input: [{ type: 'function_call_output', call_id: 'call_nope', output: '{}' }],
    }), { status: 400, param: 'input[0].call_id' });
    assertEq(e1.error?.message, 'No tool call found for function call output with call_id call_nope.', 'message');
    await expectAPIError(() => client.responses.create({ model, previous_response_id: r1.id, input: 'Something else.' }),
      { status: 400, param: 'input' });
  },

  'responses.inputTokens.count equals usage.input_tokens': async () => {
    const body = { model, instructions: 'Be brief.', input: 'Count these tokens.' };
    const count = await client.responses.inputTokens.count(body);
    assertEq(count.object, 'response.input_tokens', 'object');
    const r = await client.responses.create(body);
    assertEq(count.input_tokens, r.usage.input_tokens, 'input_tokens');
  },

  'input_items lists content parts with a status': async () => {
    const r = await client.responses.create({ model, input: 'Shape check.' });
    const page = await client.responses.inputItems.list(r.id);
    assertEq(page.data.length, 1, 'items');
    const it = page.data[0];
    assertEq(it.status, 'completed', 'status');
    assertEq(it.content?.[0]?.type, 'input_text', 'part type');
    assertEq(it.content?.[0]?.text, 'Shape check.', 'part text');
  },

  'refused fields name their param': async () => {
    await expectAPIError(() => client.responses.create({ model, input: 'x', include: ['bogus'] }), { status: 400, param: 'include[0]' });
    await expectAPIError(() => client.responses.create({ model, input: 'x', top_logprobs: 99 }), { status: 400, param: 'top_logprobs' });
    await client.responses.create({ model, input: 'x', service_tier: 'flex', prompt_cache_key: 'k', text: { verbosity: 'low' }, reasoning: { summary: 'auto' } });
  },

  'logprobs: include and top_logprobs, streamed and not': async () => {
    const body = { model, input: 'Describe a lighthouse in two sentences.', include: ['message.output_text.logprobs'], top_logprobs: 2 };
    const r = await client.responses.create(body);
    const part = r.output.find((it) => it.type === 'message')?.content?.[0];
    assert(part && part.logprobs?.length > 0, 'no logprobs');
    assertEq(part.logprobs.map((lp) => lp.token).join(''), part.text, 'tokens join to the text');
    for (const lp of part.logprobs) {
      assertEq(lp.top_logprobs.length, 2, 'top_logprobs count');
      assert(lp.top_logprobs[0].logprob >= lp.top_logprobs[1].logprob, 'top_logprobs sorted');
      assertEq(lp.bytes.length, Buffer.byteLength(lp.token), 'bytes');
    }
    const s = await client.responses.create({ ...body, stream: true });
    const deltas = [];
    let text = '';
    for await (const ev of s) {
      if (ev.type === 'response.output_text.delta') {
        deltas.push(...ev.logprobs);
        text += ev.delta;
      }
    }
    assertEq(text, part.text, 'streamed text');
    assertEq(deltas.length, part.logprobs.length, 'delta logprobs');
    await expectAPIError(() => client.responses.create({ ...body, top_logprobs: 21 }), { status: 400, param: 'top_logprobs' });
  },

  'responses.retrieve with stream of a foreground response errors instead of zero events': async () => {
    const r = await client.responses.create({ model, input: 'Hi' });
    await expectAPIError(async () => {
      const s = await client.responses.retrieve(r.id, { stream: true, starting_after: 2 });
      for await (const _ of s) { /* no events expected */ }
    }, { status: 400, param: 'stream' });
  },

  'compact is an OpenAI 404': async () => {
    await expectAPIError(() => client.responses.compact({ model, input: 'x' }), { status: 404, code: 'unknown_url' });
  },
});
