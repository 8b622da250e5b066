// Completed jobs against a live broker (GMQ_URL): each test's topic keeps
// its acked jobs an hour, completed, with results of at most 64 bytes. What
// a worker's handler resolves to is its job's result, which getJob shows;
// a result the worker cannot send (not JSON) or gmq cannot keep (413) is
// dropped, the job acked without it. The plain acks carry results too; a
// push's keepCompleted overrides its topic's, 0 included.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GmqError, ResultError } from 'gmq-client';
import { client, noBroker, topic, until, url } from '../testdata/helpers.js';

const c = client();

/** keeping is a new topic that keeps its acked jobs an hour, with results of at most 64 bytes. */
async function keeping(name) {
  const t = topic(name);
  const res = await fetch(`${url}/api/v1/topics/${t}/config`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ keep_completed: 3600, max_result: 64 }),
  });
  assert.equal(res.status, 200, await res.text());
  return t;
}

/** completed requires job id completed, with result (undefined: none). */
async function completed(id, result) {
  const job = await c.getJob(id);
  assert.equal(job?.state, 'completed', JSON.stringify(job));
  assert.ok(job.completed_at, JSON.stringify(job));
  assert.deepEqual(job.result, result, JSON.stringify(job));
  return job;
}

/** popped pushes id to t and pops it. */
async function popped(t, id) {
  await c.push(t, 'x', { id, ttr: 30 });
  const job = await c.pop(t, { timeout: 1 });
  assert.equal(job?.id, id);
  return job;
}

test("a worker acks each job with its handler's result", { skip: noBroker }, async () => {
  const t = await keeping('worker');
  const results = {
    report: { url: '/r/1.pdf', pages: 7 },
    none: undefined,
    zero: 0,
    big: 'x'.repeat(100), // over max_result
    bigint: 1n, // not JSON
    half: '\u{1F600}'.slice(0, 1), // a lone surrogate: gmq would refuse it (400), so it is not sent
  };
  for (const id of Object.keys(results)) await c.push(t, id, { id: `${t}-${id}`, ttr: 30 });
  const errors = [];
  const w = c.worker(t, async (job) => results[job.body], { signals: false, pollTimeout: 1, onError: (err) => errors.push(err) });
  try {
    await until(async () => {
      const jobs = await Promise.all(Object.keys(results).map((id) => c.getJob(`${t}-${id}`)));
      return jobs.every((j) => j?.state === 'completed');
    }, 5000, 'every job completed');
  } finally {
    await w.stop();
  }
  await completed(`${t}-report`, { url: '/r/1.pdf', pages: 7 });
  await completed(`${t}-zero`, 0);
  for (const id of ['none', 'big', 'bigint', 'half']) await completed(`${t}-${id}`, undefined);
  assert.equal(errors.length, 3, errors.join('\n'));
  assert.ok(errors.every((err) => err instanceof ResultError), errors.join('\n'));
  assert.match(errors.map(String).join('\n'), /too big to keep/);
  assert.match(errors.map(String).join('\n'), /not JSON \(.*BigInt/);
  assert.match(errors.map(String).join('\n'), /not JSON \(.*lone surrogate \\ud83d/);
});

test('ack, ackAndPop and ackMany carry a result', { skip: noBroker }, async () => {
  const t = await keeping('ack');
  let job = await popped(t, `${t}-1`);
  await c.ack(job, { result: ['one', 2, null] });
  await completed(job.id, ['one', 2, null]);

  // Too big: a 413, the job still reserved; not JSON: thrown before any request.
  job = await popped(t, `${t}-2`);
  await assert.rejects(c.ack(job, { result: 'x'.repeat(100) }), (err) => err instanceof GmqError && err.status === 413);
  await assert.rejects(c.ack(job, { result: 2n }), TypeError);
  assert.equal((await c.getJob(job.id)).state, 'reserved');
  assert.equal(await c.ackAndPop(job, t, { result: { ok: true } }), null);
  await completed(job.id, { ok: true });

  await c.pushBatch([{ topic: t, body: 'x', id: `${t}-3` }, { topic: t, body: 'y', id: `${t}-4` }]);
  const [three, four] = await c.popMany(t, 2, { timeout: 1 });
  const answer = await c.ackMany([{ ...three, result: 'first' }, four]);
  assert.deepEqual([...answer.acked].sort(), [three.id, four.id].sort());
  await completed(three.id, 'first');
  await completed(four.id, undefined);
});

test("a push's keepCompleted overrides its topic's, 0 too", { skip: noBroker }, async () => {
  const kept = await keeping('keep');
  const plain = topic('plain');
  await c.push(plain, 'x', { id: `${plain}-mine`, keepCompleted: 600 });
  await c.pushBatch([{ topic: plain, body: 'y', id: `${plain}-batch`, keepCompleted: 60 }]);
  await c.push(kept, 'x', { id: `${kept}-none`, keepCompleted: 0 });
  assert.equal((await c.getJob(`${plain}-mine`)).keep_completed, 600);
  assert.equal((await c.getJob(`${plain}-batch`)).keep_completed, 60);
  for (const t of [plain, plain, kept]) {
    const job = await c.pop(t, { timeout: 1 });
    await c.ack(job, { result: 'done' });
  }
  await completed(`${plain}-mine`, 'done');
  await completed(`${plain}-batch`, 'done');
  assert.equal(await c.getJob(`${kept}-none`), null);
});
