// A broker with a [web] token (GMQ_TOKEN; node_test.go sets both): every
// request carries it, and without it the broker answers 401.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, GmqError } from 'gmq-client';
import { noBroker, token, topic, url } from '../testdata/helpers.js';

const skip = noBroker || (!token && 'GMQ_TOKEN is not set (a broker without a token)');

test('without the token, or with a wrong one: 401', { skip }, async (t) => {
  for (const [name, given] of [['none', undefined], ['wrong', 'not-the-token']]) {
    await t.test(name, async () => {
      const c = new Client({ url, token: given });
      await assert.rejects(c.push(topic('token'), 'x'), (err) => {
        assert.ok(err instanceof GmqError);
        assert.equal(err.status, 401);
        assert.match(err.message, /requires a token/);
        return true;
      });
    });
  }
});

test('with the token every call works, the worker too', { skip }, async () => {
  const c = new Client({ url, token });
  const t = topic('token');
  const id = await c.push(t, 'secret work');
  const seen = [];
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  const w = c.worker(t, (job) => { seen.push(job.id); done(); }, { signals: false, pollTimeout: 1 });
  await finished;
  await w.stop();
  assert.deepEqual(seen, [id]);
  assert.equal(await c.getJob(id), null);
});

test('a worker without the token stops: done rejects with the 401', { skip }, async () => {
  const w = new Client({ url }).worker(topic('token'), () => {}, { signals: false, concurrency: 2 });
  await assert.rejects(w.done, (err) => err instanceof GmqError && err.status === 401);
  assert.equal(w.stopping, true);
});
