// Every waiting call waits its whole timeout and comes back empty, not with
// an error. node_test.go runs it against a broker whose request_timeout is a
// third of the wait (GMQ_WAIT): the wait is the caller's, the request
// timeout bounds only the work around it (issue 20: every long poll of
// request_timeout or more answered 503), and the client's own HTTP timeout
// (here shorter than the wait) must allow the wait on top.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { client, elapsed, noBroker, topic } from '../testdata/helpers.js';

const wait = Number(process.env.GMQ_WAIT || 1.2);
const c = client({ timeout: 1 });

/** held is a job popped and not yet acked, for the calls that ack one. */
async function held() {
  const t = topic('held');
  await c.push(t, 'x');
  const job = await c.pop(t, { timeout: 1 });
  assert.ok(job);
  return job;
}

test('each waiting call comes back empty after its whole wait', { skip: noBroker }, async (t) => {
  const empty = topic('empty');
  const calls = [
    { name: 'pop', call: () => c.pop(empty, { timeout: wait }), want: null },
    { name: 'popMany', call: () => c.popMany(empty, 3, { timeout: wait }), want: [] },
    { name: 'ackAndPop', call: async (job) => c.ackAndPop(job, empty, { timeout: wait }), held: true, want: null },
    {
      name: 'ackMany with a next batch',
      call: async (job) => (await c.ackMany([job], { topics: empty, count: 2, timeout: wait })).jobs,
      held: true,
      want: [],
    },
  ];
  // The four wait at once: each on its own connection, as a worker's loops do.
  await Promise.all(
    calls.map(async (tc) => {
      const job = tc.held ? await held() : undefined;
      const { result, ms } = await elapsed(() => tc.call(job));
      await t.test(tc.name, () => {
        assert.deepEqual(result, tc.want);
        assert.ok(ms >= wait * 1000 - 50, `came back after ${ms} ms, before the ${wait} s wait`);
      });
    }),
  );
});
