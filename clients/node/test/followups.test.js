// Follow-ups against a live broker (GMQ_URL): an ack with push resolves to
// its follow-ups' ids (ack; ackMany's pushed), and each is then popped
// under its id; without push, ack resolves to undefined. A bad follow-up
// (an id of its own, no topic) is a GmqError 400 naming it, and the job
// stays reserved. A worker's handler that resolves to a Done acks its job
// with the result and follow-ups, which the worker then works; one whose
// follow-ups gmq refuses is failed with gmq's reason.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Done, GmqError, ResultError } from 'gmq-client';
import { client, noBroker, topic, until } from '../testdata/helpers.js';

const c = client();

/** popped pushes id to t and pops it. */
async function popped(t, id) {
  await c.push(t, id, { id, ttr: 30 });
  const job = await c.pop(t, { timeout: 1 });
  assert.equal(job?.id, id);
  return job;
}

/** popAs pops from t and requires job id with body. */
async function popAs(t, id, body) {
  const job = await c.pop(t, { timeout: 5 });
  assert.equal(job?.id, id, JSON.stringify(job));
  assert.deepEqual(job.body, body);
  return job;
}

/** names says whether a refusal names follow-up i. */
function names(err, i) {
  return err instanceof GmqError && err.status === 400 && err.message.includes(`push: job ${i}:`);
}

test('an ack with follow-ups resolves to their ids, each then popped under it', { skip: noBroker }, async () => {
  const t = topic('orders');
  const mails = topic('mails');
  let job = await popped(t, `${t}-77`);
  const ids = await c.ack(job, {
    result: { shipped: true },
    push: [{ topic: mails, body: { order: 77 }, priority: 1 }, { topic: mails, body: 'invoice 77', priority: 5, ttr: 30 }],
  });
  assert.equal(ids.length, 2);
  assert.notEqual(ids[0], ids[1]);
  const acked = await c.getJob(job.id); // acked with a result: kept, completed, for keep_results
  assert.equal(acked.state, 'completed');
  assert.deepEqual(acked.result, { shipped: true });
  await popAs(mails, ids[0], { order: 77 });
  assert.equal((await popAs(mails, ids[1], 'invoice 77')).TTR, 30);

  job = await popped(t, `${t}-plain`);
  assert.equal(await c.ack(job), undefined);

  await c.pushBatch([{ topic: t, body: 'x', id: `${t}-1` }, { topic: t, body: 'y', id: `${t}-2` }]);
  const [one, two] = await c.popMany(t, 2, { timeout: 1 });
  const answer = await c.ackMany([{ ...one, push: [{ topic: mails, body: 'after one' }] }, two]);
  assert.deepEqual([...answer.acked].sort(), [one.id, two.id].sort());
  assert.deepEqual(Object.keys(answer.pushed), [one.id]);
  await popAs(mails, answer.pushed[one.id][0], 'after one');
});

test('a bad follow-up is a GmqError 400 naming it, the job still reserved', { skip: noBroker }, async () => {
  const t = topic('bad');
  const mails = topic('bad-mails');
  const job = await popped(t, `${t}-1`);
  for (const bad of [{ topic: mails, body: 'x', id: 'mine' }, { body: 'no topic' }]) {
    await assert.rejects(c.ack(job, { push: [{ topic: mails, body: 'fine' }, bad] }), (err) => names(err, 1));
    assert.equal((await c.getJob(job.id)).state, 'reserved');
  }
  assert.deepEqual(await c.ack(job, { push: [] }), []); // an empty push: a plain ack
  assert.equal(await c.getJob(job.id), null);
  assert.equal(await c.pop(mails, { timeout: 0.2 }), null);
});

test('a handler ends its job with follow-ups: a Done', { skip: noBroker }, async () => {
  const t = topic('work');
  const mails = topic('work-mails');
  await c.push(t, '1', { id: `${t}-1`, ttr: 30 });
  await c.push(t, 'bad', { id: `${t}-bad`, ttr: 30, retry: { maxAttempts: 1 } });
  await c.push(t, 'numeric', { id: `${t}-numeric`, ttr: 30, retry: { maxAttempts: 1 } });
  const handled = [];
  const errors = [];
  const w = c.worker([t, mails], async (job) => {
    handled.push(`${job.topic === t ? 'order' : 'mail'}:${job.body}`);
    if (job.body === 'bad') return new Done({ push: [{ topic: mails, body: 'never', id: 'own-id' }] });
    if (job.body === 'numeric') return new Done({ push: [{ topic: mails, body: 42 }] }); // refused before it is sent
    if (job.topic === t) return new Done({ result: 'shipped', push: [{ topic: mails, body: `mail for ${job.body}` }] });
    return undefined;
  }, { signals: false, pollTimeout: 1, onError: (err) => errors.push(err) });
  try {
    await until(async () => handled.length === 4 && (await c.getJob(`${t}-bad`))?.state === 'dead' &&
      (await c.getJob(`${t}-numeric`))?.state === 'dead', 10000, 'four jobs handled');
  } finally {
    await w.stop();
  }
  assert.deepEqual([...handled].sort(), ['mail:mail for 1', 'order:1', 'order:bad', 'order:numeric']);
  const done = await c.getJob(`${t}-1`); // acked with a result: kept, completed, for keep_results
  assert.equal(done.state, 'completed');
  assert.equal(done.result, 'shipped');
  const bad = await c.getJob(`${t}-bad`);
  assert.match(bad.last_error, /push: job 0: .*id/);
  assert.match((await c.getJob(`${t}-numeric`)).last_error, /body/);
  assert.equal(errors.length, 2, errors.join('\n'));
  assert.ok(errors.every((e) => e instanceof ResultError && /follow-ups were refused/.test(e.message)), errors.join('\n'));
  assert.equal(await c.pop(mails, { timeout: 0.2 }), null);
});
