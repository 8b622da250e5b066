// The worker loop against a live broker (GMQ_URL): concurrency, acks,
// failures with the handler's message, touches past the TTR, stop.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { GmqError, HandlerTimeoutError } from 'gmq-client';
import { client, elapsed, noBroker, topic, until } from '../testdata/helpers.js';

const c = client();
/**
 * working runs body(worker, errors) with a worker of topic (no signal
 * handlers, short polls, errors kept, more over them), and stops the worker
 * whatever happens, so a failed test does not leave it popping.
 */
async function working(t, handler, more, body) {
  const errors = [];
  const w = c.worker(t, handler, { signals: false, pollTimeout: 1, onError: (err) => errors.push(err), ...more });
  try {
    return await body(w, errors);
  } finally {
    await w.stop().catch(() => {});
  }
}

/** signal is a promise and the function that resolves it. */
function signal() {
  let fire;
  const fired = new Promise((resolve) => (fire = resolve));
  return { fired, fire };
}

test('N jobs with concurrency 4 are all run once and acked', { skip: noBroker }, async () => {
  const t = topic('many');
  const n = 20;
  const ids = await c.pushBatch(Array.from({ length: n }, (_, i) => ({ topic: t, body: String(i) })));
  const seen = new Map();
  let running = 0;
  let most = 0;
  const all = signal();
  const handler = async (job) => {
    running++;
    most = Math.max(most, running);
    await sleep(50);
    running--;
    seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
    if (seen.size === n) all.fire();
  };
  await working(t, handler, { concurrency: 4 }, async (w, errors) => {
    await all.fired;
    await w.stop(); // the last jobs' acks are done when it resolves
    assert.deepEqual(errors, []);
  });
  assert.deepEqual([...seen.keys()].sort(), [...ids].sort());
  assert.ok([...seen.values()].every((runs) => runs === 1), 'a job ran twice');
  assert.equal(most, 4, `at most ${most} handlers ran at once`);
  assert.deepEqual(await Promise.all(ids.map((id) => c.getJob(id))), ids.map(() => null), 'not all acked');
});

test('a handler that throws or rejects fails the job with its message', { skip: noBroker }, async (t) => {
  const cases = [
    { name: 'throws an Error', handler: () => { throw new Error('smtp 550: no such user'); }, want: 'smtp 550: no such user' },
    { name: 'rejects with an Error', handler: async () => { await sleep(10); throw new TypeError('bad body'); }, want: 'bad body' },
    { name: 'throws a string', handler: () => { throw 'plain words'; }, want: 'plain words' }, // eslint-disable-line no-throw-literal
  ];
  for (const tc of cases) {
    await t.test(tc.name, async () => {
      const tp = topic('throws');
      const id = await c.push(tp, 'x');
      const ran = signal();
      const handler = (job) => {
        ran.fire();
        return tc.handler(job);
      };
      const told = [];
      await working(tp, handler, { onFailure: (err, job) => told.push([job.id, err]) }, async (w, errors) => {
        await ran.fired;
        await w.stop(); // the job in hand is failed before stop resolves
        assert.deepEqual(errors, []);
      });
      assert.equal(told.length, 1); // the worker says so (it failed jobs silently)
      assert.equal(told[0][0], id);
      const job = await c.getJob(id);
      assert.equal(job.failures, 1);
      assert.equal(job.last_error, tc.want);
      assert.equal(job.state, 'delayed'); // the topic's backoff, then retried
    });
  }
});

test('a handler past the timeout has its signal aborted and its job failed with that reason', { skip: noBroker }, async () => {
  const tp = topic('timeout');
  const id = await c.push(tp, 'x');
  const ran = signal();
  let reasonSeen;
  const handler = async (job, { signal: aborted }) => {
    ran.fire();
    await new Promise((resolve) => aborted.addEventListener('abort', resolve, { once: true }));
    reasonSeen = aborted.reason;
    return 'done anyway'; // too late: the job is failed
  };
  await working(tp, handler, { timeout: 0.1 }, async (w, errors) => {
    await ran.fired;
    await until(async () => (await c.getJob(id))?.failures === 1);
    await w.stop();
    assert.deepEqual(errors, []);
  });
  assert.ok(reasonSeen instanceof HandlerTimeoutError, `the signal's reason: ${reasonSeen}`);
  const job = await c.getJob(id);
  assert.equal(job.last_error, 'gmq: the handler ran out of time after 0.1 s');
});

test("a job's own timeout, shorter than the worker's, aborts its handler and fails the job", { skip: noBroker }, async () => {
  const tp = topic('own-timeout');
  const id = await c.push(tp, 'x', { timeout: 0.2 });
  let seen;
  let reasonSeen;
  const handler = async (job, { signal: aborted }) => {
    seen = job.timeout;
    await new Promise((resolve) => aborted.addEventListener('abort', resolve, { once: true }));
    reasonSeen = aborted.reason;
  };
  await working(tp, handler, { timeout: 30 }, async (w, errors) => {
    await until(async () => (await c.getJob(id))?.failures === 1);
    await w.stop();
    assert.deepEqual(errors, []);
  });
  assert.equal(seen, 0.2, 'the popped job has its timeout');
  assert.ok(reasonSeen instanceof HandlerTimeoutError, `the signal's reason: ${reasonSeen}`);
  assert.equal((await c.getJob(id)).last_error, 'gmq: the handler ran out of time after 0.2 s');
});

test('a handler past the TTR is touched: acked once, never delivered twice', { skip: noBroker }, async () => {
  const t = topic('slow');
  const id = await c.push(t, 'slow', { ttr: 4 }); // each touch (every 2 s) has 2 s to land
  let runs = 0;
  let during;
  const handler = async (job) => {
    runs++;
    await sleep(4500); // past the TTR of 4 s
    during ??= await c.getJob(job.id);
    await sleep(500);
  };
  // A second loop would take the job if it were given back.
  await working(t, handler, { concurrency: 2 }, async (w, errors) => {
    await until(() => during, 12000, 'the handler');
    await w.stop();
    assert.deepEqual(errors, []);
  });
  assert.equal(runs, 1);
  assert.equal(during.state, 'reserved');
  assert.equal(during.attempt, 1);
  assert.equal(during.timeouts, 0, 'the TTR ran out');
  assert.equal(await c.getJob(id), null, 'not acked');
});

test('stop aborts the long polls at once', { skip: noBroker }, async () => {
  await working(topic('idle'), () => {}, { pollTimeout: 30, concurrency: 3 }, async (w) => {
    await sleep(200); // the polls are waiting
    const { ms } = await elapsed(() => w.stop());
    assert.ok(ms < 1000, `stopped after ${ms} ms`);
    assert.equal(w.stopping, true);
  });
});

test('a pop refused for good stops the worker: done rejects', { skip: noBroker }, async () => {
  const w = c.worker('-not-a-topic', () => {}, { signals: false });
  await assert.rejects(w.done, (err) => err instanceof GmqError && err.status === 400);
});

test('SIGTERM and SIGINT stop it; signals: false leaves them alone', { skip: noBroker }, async (t) => {
  for (const sig of ['SIGTERM', 'SIGINT']) {
    await t.test(sig, async () => {
      const before = process.listenerCount(sig);
      await working(topic('signal'), () => {}, { signals: undefined }, async (w) => {
        assert.equal(process.listenerCount(sig), before + 1);
        process.emit(sig, sig); // as the signal would, without ending the test runner
        await w.done;
        assert.equal(process.listenerCount(sig), before, 'listener left behind');
      });
    });
  }
  const before = process.listenerCount('SIGTERM');
  await working(topic('signal'), () => {}, {}, async () => {
    assert.equal(process.listenerCount('SIGTERM'), before);
  });
});
