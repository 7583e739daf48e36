// e2e: the official `openai` npm SDK against stitch. Usage (see e2e/node_test.go):
//   OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=test node openai_sdk.mjs
import { apiKey, assert, assertEq, baseURL, checkStream, expectAPIError, model, outputText, runTests } from './lib.mjs';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });

const weatherTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather of a city',
  strict: true,
  parameters: {
    type: 'object',
    properties: { location: { type: 'string', description: 'City name' } },
    required: ['location'],
    additionalProperties: false,
  },
};
const weatherOutput = JSON.stringify({ forecast: 'sunny', temp_c: 21 });

function weatherCall(response) {
  const call = response.output.find((it) => it.type === 'function_call');
  assert(call, `no function_call; output types ${response.output.map((it) => it.type)}`);
  assertEq(call.name, 'get_weather', 'function_call name');
  assert(call.call_id, 'function_call has no call_id');
  const args = JSON.parse(call.arguments);
  assert(typeof args.location === 'string', `arguments ${call.arguments} lack the required location`);
  return call;
}

function checkCompleted(r) {
  assert(r.id, 'response has no id');
  assertEq(r.object, 'response', 'object');
  assertEq(r.status, 'completed', 'status');
  assertEq(r.model, model, 'model');
  assert(r.output.length > 0, 'no output');
}

await runTests('openai', {
  'responses.create non-stream': async () => {
    const r = await client.responses.create({ model, input: 'Say hello to the Node suite.' });
    checkCompleted(r);
    assert(r.output_text.length > 0, 'empty output_text');
    assertEq(r.output_text, outputText(r), 'output_text');
    assert(r.usage && r.usage.input_tokens > 0 && r.usage.output_tokens > 0, `usage ${JSON.stringify(r.usage)}`);
  },

  'responses.create stream': async () => {
    const stream = await client.responses.create({
      model,
      input: [{ role: 'user', content: 'Stream a greeting.' }],
      stream: true,
    });
    const events = [];
    let deltas = '';
    for await (const ev of stream) {
      events.push(ev);
      if (ev.type === 'response.output_text.delta') deltas += ev.delta;
    }
    const { terminal, response } = checkStream(events);
    assertEq(terminal, 'response.completed', 'terminal event');
    assert(deltas.length > 0, 'no text deltas');
    assertEq(outputText(response), deltas, 'final text vs deltas');
  },

  'responses.stream helper finalResponse': async () => {
    const stream = client.responses.stream({ model, input: 'Use the stream helper.' });
    let deltas = '';
    stream.on('response.output_text.delta', (ev) => {
      deltas += ev.delta;
    });
    const final = await stream.finalResponse();
    checkCompleted(final);
    assertEq(outputText(final), deltas, 'finalResponse text vs deltas');
    assert(deltas.length > 0, 'no text deltas');
  },

  'responses.stream helper with a tool call': async () => {
    const stream = client.responses.stream({ model, tools: [weatherTool], input: 'Weather in Oslo? Call get_weather.' });
    let args = '';
    stream.on('response.function_call_arguments.delta', (ev) => {
      args += ev.delta;
    });
    const final = await stream.finalResponse();
    const call = weatherCall(final);
    assertEq(call.arguments, args, 'arguments vs deltas');
  },

  'tool round via previous_response_id': async () => {
    const r1 = await client.responses.create({ model, tools: [weatherTool], input: 'Weather in Paris? Use get_weather.' });
    checkCompleted(r1);
    const call = weatherCall(r1);
    const r2 = await client.responses.create({
      model,
      tools: [weatherTool],
      previous_response_id: r1.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: weatherOutput }],
    });
    checkCompleted(r2);
    assertEq(r2.previous_response_id, r1.id, 'previous_response_id');
    assert(r2.output_text.includes('sunny'), `answer ${JSON.stringify(r2.output_text)} does not quote the tool result`);
  },

  'tool round streamed': async () => {
    const s1 = await client.responses.create({ model, tools: [weatherTool], input: 'Weather in Rome? get_weather.', stream: true });
    const events1 = [];
    for await (const ev of s1) events1.push(ev);
    const call = weatherCall(checkStream(events1).response);
    const added = events1.find((ev) => ev.type === 'response.output_item.added' && ev.item.type === 'function_call');
    assertEq(added.item.arguments, '', 'function_call arguments at output_item.added');
    const s2 = await client.responses.create({
      model,
      tools: [weatherTool],
      previous_response_id: events1[0].response.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: weatherOutput }],
      stream: true,
    });
    const events2 = [];
    for await (const ev of s2) events2.push(ev);
    const { response } = checkStream(events2);
    assert(outputText(response).includes('sunny'), 'streamed answer does not quote the tool result');
  },

  'retrieve, delete, 404': async () => {
    const r = await client.responses.create({ model, input: 'Keep me for a moment.' });
    const got = await client.responses.retrieve(r.id);
    assertEq(got.id, r.id, 'retrieved id');
    assertEq(outputText(got), outputText(r), 'retrieved text');
    const items = [];
    for await (const it of client.responses.inputItems.list(r.id, { order: 'asc' })) items.push(it);
    assertEq(items.length, 1, 'input items');
    assertEq(items[0].role, 'user', 'input item role');
    await client.responses.delete(r.id);
    await expectAPIError(() => client.responses.retrieve(r.id), { status: 404, type: 'invalid_request_error', cls: OpenAI.NotFoundError });
    await expectAPIError(() => client.responses.delete(r.id), { status: 404, cls: OpenAI.NotFoundError });
  },

  'unknown previous_response_id': async () => {
    const err = await expectAPIError(
      () => client.responses.create({ model, previous_response_id: 'resp_node_unknown', input: 'Continue.' }),
      {
        status: 400,
        type: 'invalid_request_error',
        code: 'previous_response_not_found',
        param: 'previous_response_id',
        cls: OpenAI.BadRequestError,
      },
    );
    assert(err.message.includes('resp_node_unknown'), `message ${err.message} does not name the id`);
    await expectAPIError(
      () => client.responses.create({ model, previous_response_id: 'resp_node_unknown', input: 'Continue.', stream: true }),
      { status: 400, code: 'previous_response_not_found', param: 'previous_response_id' },
    );
  },

  'store false': async () => {
    const r = await client.responses.create({ model, store: false, input: 'Forget this.' });
    checkCompleted(r);
    await expectAPIError(() => client.responses.retrieve(r.id), { status: 404 });
    await expectAPIError(
      () => client.responses.create({ model, previous_response_id: r.id, input: 'Continue.' }),
      { status: 400, code: 'previous_response_not_found' },
    );
  },
});
