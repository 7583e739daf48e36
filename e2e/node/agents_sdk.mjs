// e2e: the OpenAI Agents SDK (@openai/agents) against stitch, tracing disabled and the client
// set explicitly so nothing leaves loopback. Usage (see e2e/node_test.go):
//   OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=test OPENAI_AGENTS_DISABLE_TRACING=1 node agents_sdk.mjs
import { apiKey, assert, assertEq, baseURL, model, runTests } from './lib.mjs';
import OpenAI from 'openai';
import {
  Agent,
  OpenAIResponsesModel,
  run,
  setDefaultOpenAIClient,
  setOpenAIAPI,
  setTracingDisabled,
  tool,
} from '@openai/agents';
import { z } from 'zod';

setTracingDisabled(true);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
setDefaultOpenAIClient(client);
setOpenAIAPI('responses');

const calls = [];
const getWeather = tool({
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: z.object({ location: z.string().describe('City name') }),
  execute: async ({ location }) => {
    calls.push(location);
    return JSON.stringify({ location, forecast: 'sunny', temp_c: 21 });
  },
});

// One agent on an explicit Responses model, one on the model name resolved through the
// default client: both must reach stitch only.
const explicitAgent = new Agent({
  name: 'Weather bot',
  instructions: 'You answer weather questions with the get_weather tool.',
  model: new OpenAIResponsesModel(client, model),
  tools: [getWeather],
});
const namedAgent = explicitAgent.clone({ model });

// expectToolRun checks that a run executed get_weather once more and answered with its result.
function expectToolRun(result, callsBefore, what) {
  assertEq(calls.length, callsBefore + 1, `${what}: get_weather executions`);
  assert(typeof result.finalOutput === 'string' && result.finalOutput.length > 0, `${what}: no final output`);
  assert(result.finalOutput.includes('sunny'), `${what}: final output ${JSON.stringify(result.finalOutput)} does not quote the tool result`);
  const types = result.newItems.map((it) => it.type);
  for (const want of ['tool_call_item', 'tool_call_output_item', 'message_output_item']) {
    assert(types.includes(want), `${what}: run items ${types} lack ${want}`);
  }
  assert(result.lastResponseId, `${what}: no lastResponseId`);
}

let first;

await runTests('agents', {
  'run with a function tool (full-history replay)': async () => {
    const before = calls.length;
    first = await run(explicitAgent, 'What is the weather in Paris? Use get_weather.');
    expectToolRun(first, before, 'first run');
  },

  'run chained with previousResponseId': async () => {
    assert(first, 'needs the first run');
    const before = calls.length;
    const result = await run(explicitAgent, 'And in Rome? Use get_weather.', { previousResponseId: first.lastResponseId });
    expectToolRun(result, before, 'chained run');
    assert(result.lastResponseId !== first.lastResponseId, 'chained run reused the previous response id');
  },

  'run continuing the history (default mode)': async () => {
    assert(first, 'needs the first run');
    const before = calls.length;
    const result = await run(explicitAgent, [...first.history, { role: 'user', content: 'And in Berlin? Use get_weather.' }]);
    expectToolRun(result, before, 'history run');
  },

  'streamed run on the default client': async () => {
    const before = calls.length;
    const result = await run(namedAgent, 'Weather in Madrid? Use get_weather.', { stream: true });
    let textDeltas = 0;
    for await (const ev of result) {
      if (ev.type === 'raw_model_stream_event' && ev.data?.type === 'output_text_delta') textDeltas++;
    }
    await result.completed;
    assert(!result.error, `stream error: ${result.error}`);
    expectToolRun(result, before, 'streamed run');
    assert(textDeltas > 0, 'no text deltas streamed');
  },
});
