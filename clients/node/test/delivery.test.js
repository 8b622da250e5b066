// Delivery tokens against a live broker (GMQ_URL): a popped job's id is
// pushed again while its first delivery is still held (as after Redis lost
// its data, when the producer pushes its job again). The calls given the
// lost delivery's job carry its token and reach nothing (404); the new job
// stays with its consumer. Given only the id, an ack reaches it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { client, noBroker, topic, until, url } from '../testdata/helpers.js';

const c = client();
const other = client();

/** remove deletes a job as an operator would (the loss). */
async function remove(id) {
  const res = await fetch(`${url}/api/v1/jobs/${encodeURIComponent(id)}`, { method: 'DELETE' });
  assert.equal(res.status, 200);
}

/** lost pops id, loses it, pushes it again and pops the new one: both at attempt 1. */
async function lost(id) {
  const t = topic(id);
  const pop = async () => {
    await c.push(t, 'x', { id, ttr: 30 });
    const job = await c.pop(t, { timeout: 1 });
    assert.ok(job && job.id === id && job.attempt === 1 && job.token, JSON.stringify(job));
    return job;
  };
  const old = await pop();
  await remove(id);
  return [old, await pop()];
}

async function reserved(id) {
  assert.equal((await c.getJob(id)).state, 'reserved', id);
}

const calls = {
  ack: (j) => c.ack(j),
  ackAndPop: (j) => c.ackAndPop(j, topic('none')),
  touch: (j) => c.touch(j),
  release: (j) => c.release(j),
  bury: (j) => c.bury(j),
  fail: (j) => c.fail(j, 'late'),
};

for (const [name, call] of Object.entries(calls)) {
  test(`${name} carries the token`, { skip: noBroker }, async () => {
    const [old, fresh] = await lost(`${topic('tok')}-${name}`);
    await assert.rejects(call(old), (err) => err.status === 404);
    await reserved(fresh.id);
    await call(fresh);
  });
}

test('ackMany and failMany carry the tokens; an id alone reaches the new job', { skip: noBroker }, async () => {
  const [old, fresh] = await lost(topic('many'));
  const acked = await c.ackMany([old]);
  assert.deepEqual(acked.acked, []);
  assert.equal(acked.failed[0].status, 404);
  const failed = await c.failMany([old], 'late');
  assert.deepEqual(failed.jobs, []);
  assert.equal(failed.failed[0].status, 404);
  await reserved(fresh.id);
  // The hazard the token closes: by id (and attempt) alone the late ack reaches the new job.
  await c.ack({ id: old.id, attempt: old.attempt });
  assert.equal(await c.getJob(fresh.id), null);
});

test("the worker's ack carries the token", { skip: noBroker }, async () => {
  const t = topic('worker');
  const id = `order-${t}`;
  await c.push(t, 'old', { id, ttr: 30 });
  const errors = [];
  let newer = null;
  const w = c.worker(t, async (job) => {
    assert.ok(job.token);
    await remove(id);
    await other.push(t, 'new', { id, ttr: 30 });
    newer = await other.pop(t, { timeout: 1 });
    assert.ok(newer && newer.attempt === 1 && newer.token !== job.token, JSON.stringify(newer));
  }, { signals: false, pollTimeout: 1, onError: (err) => errors.push(err) });
  try {
    await until(() => errors.length > 0, 5000, "the worker's ack answered");
  } finally {
    await w.stop().catch(() => {});
  }
  assert.equal(errors[0].status, 404, String(errors[0]));
  assert.equal((await c.getJob(id)).body, 'new');
  await reserved(id);
  await other.ack(newer);
});
