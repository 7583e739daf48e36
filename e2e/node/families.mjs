// e2e: the Node half of the families matrix (e2e/families_test.go): the official `openai` npm SDK
// against a stitch serving one model family through its simulator, stream and non-stream × tool
// round trip, parallel calls, reasoning on/off (STITCH_THINKING=true), tool_choice required and
// named, a malformed call. The last stdout line, "generations N", tells the Go test how many
// generations the script asked for (it compares the prompts the sim recorded).
import { apiKey, assert, assertEq, baseURL, checkStream, model, runTests } from './lib.mjs';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
const thinking = process.env.STITCH_THINKING === 'true';

const fn = (name, description, param) => ({
  type: 'function',
  name,
  description,
  strict: true,
  parameters: { type: 'object', properties: { [param]: { type: 'string' } }, required: [param], additionalProperties: false },
});
const tools = [fn('get_weather', 'Weather of a city.', 'location'), fn('get_time', 'Time in a time zone.', 'tz')];
const weatherOutput = JSON.stringify({ forecast: 'sunny', temp_c: 21 });

let generations = 0;
process.on('exit', () => process.stdout.write(`generations ${generations}\n`));

// create runs one request, streamed or not, and returns the final response.
async function create(stream, params) {
  generations++;
  if (!stream) return client.responses.create({ model, ...params });
  const events = [];
  for await (const ev of await client.responses.create({ model, ...params, stream: true })) events.push(ev);
  return checkStream(events).response;
}

const calls = (r) => r.output.filter((it) => it.type === 'function_call');

const tests = {};
for (const stream of [false, true]) {
  const mode = stream ? 'stream' : 'non-stream';
  tests[`${mode} tool round trip`] = async () => {
    const r1 = await create(stream, { tools, input: 'What is the weather in Paris? Use get_weather.' });
    assertEq(r1.status, 'completed', 'turn 1 status');
    const [call] = calls(r1);
    assert(call && call.name === 'get_weather', `turn 1 output ${r1.output.map((it) => it.type)}`);
    JSON.parse(call.arguments);
    const r2 = await create(stream, {
      tools,
      previous_response_id: r1.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: weatherOutput }],
    });
    assertEq(r2.status, 'completed', 'turn 2 status');
    assert(JSON.stringify(r2.output).includes('sunny'), `turn 2 does not quote the tool output: ${JSON.stringify(r2.output)}`);
  };
  tests[`${mode} parallel calls`] = async () => {
    const r = await create(stream, { tools, input: 'Weather and time for Paris: call get_weather and get_time in parallel.' });
    assertEq(r.status, 'completed', 'status');
    assertEq(calls(r).map((c) => c.name).join(','), 'get_weather,get_time', 'calls');
    assertEq(new Set(calls(r).map((c) => c.call_id)).size, 2, 'distinct call ids');
  };
  if (thinking) {
    for (const effort of ['low', 'none']) {
      tests[`${mode} reasoning ${effort}`] = async () => {
        const r = await create(stream, { input: 'Say hello.', reasoning: { effort } });
        assertEq(r.status, 'completed', 'status');
        assertEq(r.output.some((it) => it.type === 'reasoning'), effort !== 'none', 'reasoning item present');
      };
    }
  }
  tests[`${mode} tool_choice required`] = async () => {
    const r = await create(stream, { tools, input: 'Hello there.', tool_choice: 'required' });
    assertEq(r.status, 'completed', 'status');
    assert(calls(r).length > 0, `output ${r.output.map((it) => it.type)}`);
    JSON.parse(calls(r)[0].arguments);
  };
  tests[`${mode} tool_choice named`] = async () => {
    const r = await create(stream, { tools, input: 'What is the weather in Paris? Use get_weather.', tool_choice: { type: 'function', name: 'get_time' } });
    assertEq(r.status, 'completed', 'status');
    assertEq(calls(r).map((c) => c.name).join(','), 'get_time', 'calls');
  };
  tests[`${mode} malformed call`] = async () => {
    const r = await create(stream, { tools, input: 'What is the weather in Paris? Use get_weather. This is a malformed call.' });
    assertEq(r.status, 'incomplete', 'status');
    assertEq(r.incomplete_details?.reason, 'malformed_tool_call', 'incomplete_details.reason');
    assertEq(calls(r).length, 1, 'function_call items');
    assertEq(calls(r)[0].status, 'incomplete', 'function_call status');
    for (const it of r.output) {
      if (it.type === 'message') assert(!JSON.stringify(it).includes('get_weather'), `broken call as text: ${JSON.stringify(it)}`);
    }
  };
}

// The SDK's stream helper accumulates the response from the events and fails when a call's id
// changes between output_item.added and completed; the id from .added must continue the round
// (issue 33: Mistral's changed mid-stream).
tests['stream helper: one call id from output_item.added to completed'] = async () => {
  generations++;
  const s = client.responses.stream({ model, tools, input: 'What is the weather in Paris? Use get_weather.' });
  const added = [];
  for await (const ev of s) {
    if (ev.type === 'response.output_item.added' && ev.item.type === 'function_call') added.push(ev.item.call_id);
  }
  const r1 = await s.finalResponse();
  assertEq(r1.status, 'completed', 'turn 1 status');
  assertEq(calls(r1).map((c) => c.call_id).join(','), added.join(','), 'call ids: completed vs output_item.added');
  assert(added.length === 1, `turn 1 calls ${added.length}`);
  const r2 = await create(true, {
    tools,
    previous_response_id: r1.id,
    input: [{ type: 'function_call_output', call_id: added[0], output: weatherOutput }],
  });
  assertEq(r2.status, 'completed', 'turn 2 status');
};

await runTests('families', tests);
