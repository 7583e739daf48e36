// e2e: background responses and the Conversations API of issue 18 with the official `openai`
// npm SDK, across two stitch replicas sharing one Redis (see e2e/background_test.go):
// OPENAI_BASE_URL is replica A, STITCH_BASE_URL_B replica B.
import { apiKey, assert, assertEq, baseURL, expectAPIError, model, runTests } from './lib.mjs';
import OpenAI from 'openai';

const urlB = process.env.STITCH_BASE_URL_B;
if (!urlB) {
  process.stderr.write('STITCH_BASE_URL_B is not set\n');
  process.exit(2);
}
const a = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
const b = new OpenAI({ baseURL: urlB, apiKey, maxRetries: 0, timeout: 60_000 });

await runTests('background', {
  'background create, then retrieve with stream on the other replica': async () => {
    const r = await a.responses.create({ model, input: 'Say hello.', background: true, max_output_tokens: 40 });
    assertEq(r.background, true, 'background');
    assert(r.status === 'in_progress' || r.status === 'queued', `status ${r.status}`);
    const seqs = [];
    let last;
    for await (const ev of await b.responses.retrieve(r.id, { stream: true })) {
      seqs.push(ev.sequence_number);
      last = ev;
    }
    assertEq(seqs[0], 0, 'first sequence_number');
    seqs.forEach((s, i) => assertEq(s, i, `sequence_number ${i}`));
    assert(last.type === 'response.completed' || last.type === 'response.incomplete', `last event ${last.type}`);
    const got = await b.responses.retrieve(r.id);
    assertEq(got.status, last.response.status, 'status');
    assertEq(got.output_text, last.response.output_text ?? got.output_text, 'output_text');
    // starting_after replays only the rest.
    const rest = [];
    for await (const ev of await a.responses.retrieve(r.id, { stream: true, starting_after: seqs.length - 3 })) rest.push(ev.sequence_number);
    assertEq(JSON.stringify(rest), JSON.stringify(seqs.slice(-2)), 'events after starting_after');
  },

  'responses.cancel ends a running background response': async () => {
    const r = await a.responses.create({ model, input: 'Tell me a long story.', background: true, reasoning: { effort: 'none' } });
    const stream = await b.responses.retrieve(r.id, { stream: true });
    for await (const ev of stream) {
      if (ev.type === 'response.output_text.delta') break; // under way
    }
    const c = await b.responses.cancel(r.id);
    assertEq(c.status, 'cancelled', 'cancel status');
    assertEq((await a.responses.retrieve(r.id)).status, 'cancelled', 'retrieved status');
    assertEq((await a.responses.cancel(r.id)).status, 'cancelled', 'second cancel');
    const done = await a.responses.create({ model, input: 'Hi.', background: true, max_output_tokens: 10 });
    for await (const _ of await a.responses.retrieve(done.id, { stream: true })) { /* to the end */ }
    const ended = (await a.responses.retrieve(done.id)).status; // incomplete: max_output_tokens
    assert(ended === 'completed' || ended === 'incomplete', `ended ${ended}`);
    assertEq((await b.responses.cancel(done.id)).status, ended, 'cancel of a finished response');
    await expectAPIError(() => a.responses.cancel('resp_nope'), { status: 404 });
    const fg = await a.responses.create({ model, input: 'Hi.', max_output_tokens: 10 });
    await expectAPIError(() => a.responses.cancel(fg.id), { status: 400 });
  },

  'conversations.* across replicas': async () => {
    const conv = await a.conversations.create({ metadata: { topic: 'node' }, items: [{ type: 'message', role: 'user', content: 'Remember: blue.' }] });
    assert(conv.id.startsWith('conv_'), `id ${conv.id}`);
    assertEq((await b.conversations.retrieve(conv.id)).metadata.topic, 'node', 'metadata');
    assertEq((await b.conversations.update(conv.id, { metadata: { topic: 'n2' } })).metadata.topic, 'n2', 'updated metadata');
    const r1 = await a.responses.create({ model, conversation: conv.id, input: 'What color?', max_output_tokens: 20 });
    assertEq(r1.conversation?.id, conv.id, 'response.conversation');
    await b.responses.create({ model, conversation: { id: conv.id }, input: 'Again?', max_output_tokens: 20 });
    const items = [];
    for await (const it of b.conversations.items.list(conv.id, { order: 'asc', limit: 2 })) items.push(it); // pages of 2
    const users = items.filter((it) => it.type === 'message' && it.role === 'user').map((it) => it.content[0].text);
    assertEq(JSON.stringify(users), JSON.stringify(['Remember: blue.', 'What color?', 'Again?']), 'user turns');
    const added = await a.conversations.items.create(conv.id, { items: [{ type: 'message', role: 'user', content: 'Extra.' }] });
    const id = added.data[0].id;
    assertEq((await b.conversations.items.retrieve(id, { conversation_id: conv.id })).id, id, 'items.retrieve');
    assertEq((await b.conversations.items.delete(id, { conversation_id: conv.id })).id, conv.id, 'items.delete');
    await expectAPIError(() => a.conversations.items.retrieve(id, { conversation_id: conv.id }), { status: 404 });
    await expectAPIError(() => a.responses.create({ model, conversation: conv.id, previous_response_id: r1.id, input: 'x' }), { status: 400, param: 'conversation' });
    assertEq((await b.conversations.delete(conv.id)).deleted, true, 'deleted');
    await expectAPIError(() => a.conversations.retrieve(conv.id), { status: 404 });
    await expectAPIError(() => a.responses.create({ model, conversation: conv.id, input: 'x' }), { status: 404 });
  },
});
