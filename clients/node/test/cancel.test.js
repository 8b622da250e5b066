// Progress, cancelling and waiting for the end against a live broker
// (GMQ_URL). A worker's handler whose job is cancelled has its signal
// aborted with a CancelledError when the worker's touch learns it (TTR 2 s:
// a touch a second), or when the handler's own progress does (a GmqError
// 410); the job ends cancelled, neither acked nor failed, and onCancel is
// told. A handler that finishes anyway has its ack's 410 told to onCancel.
// progress reports a value and a log line, which getJob shows; cancel ends
// a waiting job at once; waitEnd is answered when a worker acks the job
// with a result; pushAndWait brings the result back in the push's request,
// or the id when none came in time.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CancelledError, GmqError } from 'gmq-client';
import { client, noBroker, topic, until, url } from '../testdata/helpers.js';

const c = client();

/** keeping is a new topic that keeps its ended jobs an hour. */
async function keeping(name) {
  const t = topic(name);
  const res = await fetch(`${url}/api/v1/topics/${t}/config`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ keep_completed: 3600 }),
  });
  assert.equal(res.status, 200, await res.text());
  return t;
}

/** cancelled requires job id ended cancelled (its topic keeps it), never failed. */
async function cancelled(id) {
  const job = await until(async () => {
    const j = await c.getJob(id);
    return j?.state === 'cancelled' && j;
  }, 10000, `${id} cancelled`);
  assert.equal(job.failures, 0, JSON.stringify(job));
  assert.ok(job.cancelled_at && job.result === undefined, JSON.stringify(job));
  return job;
}

/** gate is a promise with its resolve. */
function gate() {
  let open;
  const promise = new Promise((resolve) => (open = resolve));
  return { promise, open };
}

for (const [how, ttr] of [['touch', 2], ['progress', 60]]) {
  test(`a cancelled job's handler is stopped by the worker's ${how}`, { skip: noBroker }, async () => {
    const t = await keeping(how);
    const id = `${t}-export`;
    await c.push(t, 'all orders', { id, ttr });
    const started = gate();
    const stopped = gate();
    const told = [];
    const w = c.worker(t, async (job, { signal }) => {
      started.open();
      for (let step = 1; how === 'progress' && !signal.aborted; step++) {
        await c.progress(job, { progress: { step }, log: `step ${step}` }).catch((err) => {
          if (err?.status !== 410) throw err;
        });
        await sleep(20);
      }
      if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      stopped.open(signal.reason);
      throw signal.reason; // a failure, were the job not cancelled
    }, { signals: false, pollTimeout: 1, onCancel: (err, job) => told.push([err, job.id]) });
    try {
      await started.promise;
      if (how === 'progress') await until(async () => (await c.getJob(id))?.progress, 10000, 'the first progress');
      const job = await c.cancel(id);
      assert.equal(job.state, 'reserved');
      assert.equal(job.cancelling, true);
      const reason = await Promise.race([stopped.promise, sleep(10000, 'not stopped')]);
      assert.ok(reason instanceof CancelledError, String(reason));
      assert.match(reason.message, new RegExp(`learnt at its ${how}`));
      assert.equal(reason.cause?.status, 410);
      const ended = await cancelled(id);
      if (how === 'progress') assert.equal(ended.log[0].line, 'step 1');
      await until(() => told.length === 1, 5000, 'onCancel told');
      assert.equal(told[0][1], id);
    } finally {
      await w.stop();
    }
  });
}

test("a handler that finishes after its job's cancel: its ack's 410 goes to onCancel", { skip: noBroker }, async () => {
  const t = await keeping('late');
  const id = `${t}-label`;
  await c.push(t, 'x', { id, ttr: 60 });
  const started = gate();
  const finish = gate();
  const told = [];
  const errors = [];
  const w = c.worker(t, async () => {
    started.open();
    await finish.promise;
    return 'printed';
  }, { signals: false, pollTimeout: 1, onCancel: (err) => told.push(err), onError: (err) => errors.push(err) });
  try {
    await started.promise;
    assert.equal((await c.cancel(id)).cancelling, true);
    finish.open();
    await cancelled(id);
    await until(() => told.length === 1, 5000, 'onCancel told');
    assert.match(told[0].message, /learnt at its ack/);
    assert.deepEqual(errors, []);
  } finally {
    await w.stop();
  }
});

test('progress and a log line, read back; cancel of waiting jobs', { skip: noBroker }, async () => {
  const t = await keeping('progress-calls');
  await c.push(t, 'x', { id: `${t}-2`, ttr: 30 });
  const job = await c.pop(t, { timeout: 1 });
  await c.progress(job, { progress: { rows: 4000, of: 12000 }, log: 'page 1 of 3' });
  const got = await c.progress(job, { log: 'page 2 of 3' }); // a line alone: the progress stays
  assert.deepEqual(got.progress, { rows: 4000, of: 12000 });
  assert.deepEqual(got.log.map((l) => l.line), ['page 1 of 3', 'page 2 of 3']);
  assert.ok(got.log[0].at);
  await assert.rejects(c.progress({ id: job.id, attempt: job.attempt + 1 }, { progress: 1 }), (err) => err instanceof GmqError && err.status === 409);
  await c.ack(job);
  assert.equal((await c.getJob(job.id)).log.length, 2);

  await c.push(t, 'x', { id: `${t}-waiting`, delay: 3600 });
  const ended = await c.cancel(`${t}-waiting`);
  assert.equal(ended.state, 'cancelled');
  assert.ok(ended.cancelled_at);
  const plain = topic('plain');
  await c.push(plain, 'x', { id: `${plain}-1` });
  assert.deepEqual(await c.cancel(`${plain}-1`), { id: `${plain}-1`, state: 'cancelled' });
  await assert.rejects(c.cancel(`${t}-waiting`), (err) => err.status === 409);
  await assert.rejects(c.cancel(`${plain}-1`), (err) => err.status === 404);
});

test('waitEnd is answered when a worker acks the job with a result', { skip: noBroker }, async () => {
  const t = await keeping('wait');
  const id = `${t}-label`;
  await c.push(t, 'x', { id });
  assert.equal(await c.waitEnd(id, { timeout: 0.2 }), null);
  const waiting = c.waitEnd(id, { timeout: 30 });
  await until(async () => (await (await fetch(`${url}/api/v1/stats`)).json()).current_end_waits === 1, 10000, 'the wait under way');
  const w = c.worker(t, async () => 'printed', { signals: false, pollTimeout: 1 });
  try {
    const end = await waiting;
    assert.equal(end.state, 'completed');
    assert.equal(end.result, 'printed');
  } finally {
    await w.stop();
  }
  await assert.rejects(c.waitEnd(`${t}-none`), (err) => err.status === 404);
});

test('pushAndWait: the result in the push, or the id after the wait', { skip: noBroker }, async () => {
  const t = await keeping('quotes');
  const w = c.worker(t, async (job) => ({ price: 42, for: job.body }), { signals: false, pollTimeout: 1 });
  try {
    const { id, end } = await c.pushAndWait(t, 'ada', { wait: 20 });
    assert.equal(end.id, id);
    assert.equal(end.state, 'completed');
    assert.deepEqual(end.result, { price: 42, for: 'ada' });
  } finally {
    await w.stop();
  }
  assert.deepEqual(await c.pushAndWait(t, 'bob', { id: `${t}-2`, wait: 0.2 }), { id: `${t}-2`, end: null });
  assert.equal((await c.getJob(`${t}-2`)).state, 'ready');
});
