// The transport against a stub broker (no gmq needed): the token, retries
// on 503 and how a retried call reads its answer, timeouts, aborts.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { Client, GmqError } from 'gmq-client';
import { elapsed, stub } from '../testdata/helpers.js';

const { version } = createRequire(import.meta.url)('gmq-client/package.json');
const down = { status: 503, headers: { 'Retry-After': '0' }, body: { error: 'redis is unreachable' } };
const job = { id: 'j1', topic: 't', body: 'x', attempt: 1, TTR: 60 };
const unique = { key: 'k', for: 60 };
/** held is a unique push's 409: its key is held by job by. */
const held = (by) => ({ status: 409, body: { error: `unique key "k" of topic "t" is held by job ${by}`, id: by, internal_id: 7 } });
/** madeThenCancelled is a create's 503 after batch b was made (and cancelled: its jobs could not all be pushed). */
const madeThenCancelled = (b) => ({ ...down, body: { error: 'redis is unreachable', batch: b } });
/** taken is a retried create's or add's 409: its first job's client id is taken (by the earlier try's?). */
const taken = { status: 409, body: { error: 'batch 9: jobs[0]: push "p1": a live job already has this id', batch: '9' } };
const named = [{ topic: 't', body: 'a', id: 'p1' }, { topic: 't', body: 'b', id: 'p2' }];

/**
 * with runs body against a stub answering answers, with a client of quick
 * retries (options over them), and closes the stub.
 */
async function withStub(answers, options, body) {
  const s = await stub(answers);
  try {
    return await body(new Client({ url: s.url, retryMaxDelay: 0.05, ...options }), s.seen);
  } finally {
    s.close();
  }
}

test('a 503 is retried after its Retry-After, with the token and the same body', async () => {
  const answers = [{ ...down, headers: { 'Retry-After': '1' } }, { status: 201, body: { id: '7' } }];
  await withStub(answers, { token: 's3cret', retryMaxDelay: 10 }, async (c, seen) => {
    const { result, ms } = await elapsed(() => c.push('mail', 'hi', { ttr: 30 }));
    assert.equal(result, '7');
    assert.ok(ms >= 950, `retried after ${ms} ms, before the Retry-After of 1 s`);
    assert.equal(seen.length, 2);
    for (const r of seen) {
      assert.equal(r.headers.authorization, 'Bearer s3cret');
      assert.equal(r.headers['content-type'], 'application/json');
      assert.equal(r.headers['user-agent'], `gmq-client-node/${version}`);
      assert.deepEqual(r.body, { topic: 'mail', body: 'hi', TTR: 30 });
    }
  });
});

test('retries: n tries n+1 times, then throws the 503', async (t) => {
  for (const retries of [0, 2]) {
    await t.test(`retries ${retries}`, () =>
      withStub([down], { retries }, async (c, seen) => {
        await assert.rejects(c.pop('t'), (err) => err instanceof GmqError && err.status === 503 && err.message === 'redis is unreachable');
        assert.equal(seen.length, retries + 1);
      }),
    );
  }
});

test('how a retried call reads its answer', async (t) => {
  const cases = [
    {
      name: "push with a client id: a retry's 409 is the id, stored by an earlier try",
      answers: [down, { status: 409, body: { error: 'push "order-1": a live job already has this id' } }],
      call: (c) => c.push('t', 'x', { id: 'order-1' }),
      want: 'order-1',
    },
    {
      name: "a unique push with a client id: a retry's 409 for the id is stored",
      answers: [down, { status: 409, body: { error: 'push "order-1": a live job already has this id' } }],
      call: (c) => c.push('t', 'x', { id: 'order-1', unique }),
      want: { id: 'order-1' },
    },
    {
      name: "a unique push with a client id: a retry's 409 naming the id as the holder is stored",
      answers: [down, held('order-1')],
      call: (c) => c.push('t', 'x', { id: 'order-1', unique }),
      want: { id: 'order-1' },
    },
    {
      name: "a unique push that replaced a waiting job: gmq's answer",
      answers: [{ status: 200, body: { id: 'r1', internal_id: 5, unique: 'replaced' } }],
      call: (c) => c.push('t', 'x', { id: 'r2', unique: { ...unique, mode: 'replace' } }),
      want: { id: 'r1', internal_id: 5, unique: 'replaced' },
    },
    {
      name: "ack: a retry's 404 means an earlier try acked it",
      answers: [down, { status: 404, body: { error: 'ack "j1": not found' } }],
      call: (c) => c.ack(job),
      want: undefined,
    },
    {
      name: 'ackAndPop: a 503 after the ack retries only the pop',
      answers: [{ ...down, body: { error: 'pop: redis is unreachable', acked: 'j1' } }, { status: 200, body: { ...job, id: 'j2' } }],
      call: (c) => c.ackAndPop(job, 't', { timeout: 1 }),
      want: { ...job, id: 'j2' },
      sent: ['/api/v1/jobs/j1/ack', '/api/v1/pop'],
    },
    {
      name: 'ackAndPop: a retry answering 404 was acked: it pops',
      answers: [down, { status: 404, body: { error: 'ack "j1": not found' } }, { status: 204 }],
      call: (c) => c.ackAndPop(job, 't', { timeout: 1 }),
      want: null,
      sent: ['/api/v1/jobs/j1/ack', '/api/v1/jobs/j1/ack', '/api/v1/pop'],
    },
    {
      name: 'ackMany with a count: a 503 after the acks retries only the pop',
      answers: [{ ...down, body: { error: 'redis is unreachable', acked: ['j1'], failed: [] } }, { status: 200, body: { jobs: [job] } }],
      call: (c) => c.ackMany([job], { topics: 't', count: 5, timeout: 1 }),
      want: { acked: ['j1'], failed: [], jobs: [job] },
      sent: ['/api/v1/ack', '/api/v1/pop'],
    },
    {
      name: "deleteSchedule: a retry's 404 means an earlier try deleted it",
      answers: [down, { status: 404, body: { error: 'schedule "a b": not found' } }],
      call: (c) => c.deleteSchedule('a b'),
      want: undefined,
      sent: ['/api/v1/schedules/a%20b', '/api/v1/schedules/a%20b'],
    },
    {
      name: "releaseUnique: a retry's 404 means an earlier try released it",
      answers: [down, { status: 404, body: { error: 'unique key "k/1" of topic "t": not found' } }],
      call: (c) => c.releaseUnique('t', 'k/1'),
      want: undefined,
      sent: ['/api/v1/topics/t/unique/k%2F1', '/api/v1/topics/t/unique/k%2F1'],
    },
    {
      name: 'createBatch: a 503 that names no batch made none: retried',
      answers: [down, { status: 201, body: { id: '5', ids: ['6'] } }],
      call: (c) => c.createBatch({ jobs: [{ topic: 't', body: 'a' }] }),
      want: { id: '5', ids: ['6'] },
      sent: ['/api/v1/batches', '/api/v1/batches'],
    },
    {
      name: "createBatch with client ids: a retry's 409 whose first job is in a batch that stands is that batch",
      answers: [madeThenCancelled('5'), taken, { status: 200, body: { id: 'p1', state: 'ready', batch: '5' } },
        { status: 200, body: { id: '5', state: 'closed' } }],
      call: (c) => c.createBatch({ jobs: named }),
      want: { id: '5', ids: ['p1', 'p2'] },
      sent: ['/api/v1/batches', '/api/v1/batches', '/api/v1/jobs/p1', '/api/v1/batches/5'],
    },
    {
      name: "addToBatch with client ids: a retry's 409 whose first job is in the batch is added",
      answers: [down, taken, { status: 200, body: { id: 'p1', state: 'ready', batch: '5' } }],
      call: (c) => c.addToBatch('5', named),
      want: ['p1', 'p2'],
      sent: ['/api/v1/batches/5/jobs', '/api/v1/batches/5/jobs', '/api/v1/jobs/p1'],
    },
    {
      name: 'cancelBatch: retried; a retry counts what it cancelled',
      answers: [down, { status: 200, body: { cancelled: 0 } }],
      call: (c) => c.cancelBatch({ id: '5' }),
      want: 0,
      sent: ['/api/v1/batches/5', '/api/v1/batches/5'],
    },
    {
      name: "ackMany: a retry's 404s are acked",
      answers: [down, { status: 200, body: { acked: ['j2'], failed: [{ id: 'j1', status: 404, error: 'not found' }] } }],
      call: (c) => c.ackMany([job, 'j2']),
      want: { acked: ['j2', 'j1'], failed: [] },
    },
  ];
  for (const tc of cases) {
    await t.test(tc.name, () =>
      withStub(tc.answers, {}, async (c, seen) => {
        assert.deepEqual(await tc.call(c), tc.want);
        if (tc.sent) assert.deepEqual(seen.map((r) => r.url), tc.sent);
      }),
    );
  }
});

test('answers that are thrown', async (t) => {
  const cases = [
    {
      name: "push with a client id: a first try's 409 (the id is taken)",
      answers: [{ status: 409, body: { error: 'push "order-1": a live job already has this id' } }],
      call: (c) => c.push('t', 'x', { id: 'order-1' }),
      status: 409,
      message: 'push "order-1": a live job already has this id',
    },
    {
      name: "push with a client id: a retry's 409 for a dependency that died meanwhile is not the id's",
      answers: [down, { status: 409, body: { error: 'after: job 5 is dead, so this job would be cancelled at once' } }],
      call: (c) => c.push('t', 'x', { id: 'order-1', after: ['5'] }),
      status: 409,
      message: 'after: job 5 is dead, so this job would be cancelled at once',
      tries: 2,
    },
    {
      name: "a unique push with a client id: a retry's 409 naming another holder",
      answers: [down, held('theirs')],
      call: (c) => c.push('t', 'x', { id: 'order-1', unique }),
      status: 409,
      message: 'unique key "k" of topic "t" is held by job theirs',
      heldBy: 'theirs',
      tries: 2,
    },
    {
      name: "a unique push without a client id: a retry's 409 names the holder (maybe the first try's job)",
      answers: [down, held('7')],
      call: (c) => c.push('t', 'x', { unique }),
      status: 409,
      message: 'unique key "k" of topic "t" is held by job 7',
      heldBy: '7',
      tries: 2,
    },
    {
      name: 'pushBatch: a 503 that stored some jobs, with their ids',
      answers: [{ ...down, body: { error: 'redis is unreachable', stored_ids: ['1'] } }],
      call: (c) => c.pushBatch([{ topic: 't', body: 'a' }, { topic: 't', body: 'b' }]),
      status: 503,
      message: 'redis is unreachable',
      body: { error: 'redis is unreachable', stored_ids: ['1'] },
    },
    {
      name: 'createBatch without client ids: a 503 that names a batch made (maybe standing) is not retried',
      answers: [madeThenCancelled('5')],
      call: (c) => c.createBatch({ jobs: [{ topic: 't', body: 'a' }] }),
      status: 503,
      message: 'redis is unreachable',
      body: { error: 'redis is unreachable', batch: '5' },
    },
    {
      name: "createBatch with client ids: a retry's 409 whose first job's batch is cancelled",
      answers: [madeThenCancelled('5'), taken, { status: 200, body: { id: 'p1', state: 'cancelled', batch: '5' } }],
      call: (c) => c.createBatch({ jobs: named }),
      status: 409,
      message: taken.body.error,
      body: taken.body,
      tries: 3,
    },
    {
      name: "addToBatch with client ids: a retry's 409 whose first job is another batch's",
      answers: [down, taken, { status: 200, body: { id: 'p1', state: 'ready', batch: '4' } }],
      call: (c) => c.addToBatch('5', named),
      status: 409,
      message: taken.body.error,
      tries: 3,
    },
    {
      name: 'addToBatch without client ids: a 503 is not retried (the jobs may have been added)',
      answers: [down],
      call: (c) => c.addToBatch('5', [{ topic: 't', body: 'a' }, { topic: 't', body: 'b', id: 'p2' }]),
      status: 503,
      message: 'redis is unreachable',
    },
    {
      name: 'getBatch: none is a 404',
      answers: [{ status: 404, body: { error: 'batch "7": not found' } }],
      call: (c) => c.getBatch('7'),
      status: 404,
      message: 'batch "7": not found',
    },
    {
      name: 'deleteSchedule: a first try\'s 404 (none)',
      answers: [{ status: 404, body: { error: 'schedule "s": not found' } }],
      call: (c) => c.deleteSchedule('s'),
      status: 404,
      message: 'schedule "s": not found',
    },
    {
      name: "fireSchedule: a fire is not taken as done; a retry's 409 is thrown",
      answers: [down, { status: 409, body: { error: 'schedule "s": conflict: overlap skip' } }],
      call: (c) => c.fireSchedule('s'),
      status: 409,
      message: 'schedule "s": conflict: overlap skip',
      tries: 2,
    },
    {
      name: 'an answer that is not gmq\'s keeps its text',
      answers: [{ status: 502, body: 'Bad Gateway\n' }],
      call: (c) => c.pop('t'),
      status: 502,
      message: 'Bad Gateway',
    },
  ];
  for (const tc of cases) {
    await t.test(tc.name, () =>
      withStub(tc.answers, {}, async (c, seen) => {
        const err = await tc.call(c).then(
          () => assert.fail('no error'),
          (e) => e,
        );
        assert.ok(err instanceof GmqError, err);
        assert.equal(err.status, tc.status);
        assert.equal(err.message, tc.message);
        if (tc.body) assert.deepEqual(err.body, tc.body);
        assert.equal(err.heldBy, tc.heldBy);
        assert.equal(seen.length, tc.tries ?? 1);
      }),
    );
  }
});

test("workflows' fields go on the wire as gmq names them, follow-ups' too, at any depth", () =>
  withStub([{ status: 201, body: { id: '1' } }, { status: 201, body: { id: '5', ids: [] } }], {}, async (c, seen) => {
    await c.push('t', 'x', {
      after: ['3', { id: 'p1' }], onDependencyFailure: 'run', withResults: true, then: [], keepCompleted: 60,
      onDead: [{ topic: 'u', body: 'y', retry: { maxAttempts: 2 }, then: [{ topic: 'v', body: 'z', withResult: true, ttr: 5 }] }],
    });
    await c.createBatch({ onComplete: { topic: 'u', body: 'done', withResult: true }, onSuccess: null, withResults: true, open: true });
    assert.deepEqual(seen[0].body, {
      topic: 't', body: 'x', after: ['3', 'p1'], on_dependency_failure: 'run', with_results: true, keep_completed: 60,
      on_dead: [{ topic: 'u', body: 'y', retry: { max_attempts: 2 }, then: [{ topic: 'v', body: 'z', with_result: true, TTR: 5 }] }],
    });
    assert.deepEqual(seen[1].body, { on_complete: { topic: 'u', body: 'done', with_result: true }, with_results: true, open: true, jobs: [] });
  }));

test('no answer within the timeout is a GmqError of status 0', () =>
  withStub([{ hang: true }], { timeout: 0.2 }, async (c) => {
    const { result: err, ms } = await elapsed(() => c.touch(job).catch((e) => e));
    assert.ok(err instanceof GmqError && err.status === 0, err);
    assert.match(err.message, /^POST \/api\/v1\/jobs\/j1\/touch: no answer within 0.2 s$/);
    assert.ok(ms < 1000, `gave up after ${ms} ms`);
  }));

test('a waiting call is allowed its wait plus the timeout', () =>
  withStub([{ status: 204, after: 600 }], { timeout: 0.3 }, async (c, seen) => {
    assert.equal(await c.pop('t', { timeout: 0.5 }), null);
    assert.deepEqual(seen[0].body, { topics: ['t'], timeout: 0.5 });
  }));

test("the caller's signal aborts a call, and a wait between tries", async (t) => {
  for (const [name, answers] of [
    ['a long poll', [{ hang: true }]],
    ['a retry wait', [{ ...down, headers: { 'Retry-After': '5' } }]],
  ]) {
    await t.test(name, () =>
      withStub(answers, { retryMaxDelay: 10 }, async (c) => {
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 100);
        const { result: err, ms } = await elapsed(() => c.pop('t', { timeout: 5, signal: ac.signal }).catch((e) => e));
        assert.equal(err.name, 'AbortError');
        assert.ok(ms < 1000, `aborted after ${ms} ms`);
      }),
    );
  }
});

test('bad arguments are refused before any request', async () => {
  const c = new Client({ url: 'http://127.0.0.1:1' });
  await assert.rejects(c.push('t', 42), /body is a string, an object or an array, got number/);
  await assert.rejects(c.push('t', null), /body is a string, an object or an array, got null/);
  await assert.rejects(c.update('j', { body: true }), /body is a string, an object or an array, got boolean/);
  await assert.rejects(c.ack({}), TypeError);
  await assert.rejects(c.pop([]), TypeError);
  await assert.rejects(c.createBatch({ jobs: { topic: 't', body: 'x' } }), /jobs are an array/);
  await assert.rejects(c.addToBatch('5', [{ topic: 't', body: 1 }]), /body is a string/);
  await assert.rejects(c.push('t', 'x', { then: [{ topic: 'u', body: false }] }), /body is a string/);
  await assert.rejects(c.getBatch({}), /a batch is named by its id/);
  assert.throws(() => new Client({ retries: -1 }), /retries must be a number/);
  assert.throws(() => c.worker('t', 'not a function'), /needs a handler/);
});
