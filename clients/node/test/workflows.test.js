// Workflows against a live broker (GMQ_URL): a job pushed with after waits
// until its dependencies complete, then runs with their results
// (withResults), or, when one fails, is cancelled or runs
// (onDependencyFailure); a job's own then and onDead are pushed when it
// completes (withResult: with its result, as an ack's push) and when it
// dies; a batch's onComplete comes once with its summary, getBatch shows
// it done, an open batch takes addToBatch until closeBatch,
// cancelBatch cancels one, and listBatches lists them, newest first.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GmqError } from 'gmq-client';
import { client, noBroker, topic, until } from '../testdata/helpers.js';

const c = client();

/** popAs pops from t, waiting up to wait seconds, and requires job id. */
async function popAs(t, id, wait = 5) {
  const job = await c.pop(t, { timeout: wait });
  assert.equal(job?.id, id, JSON.stringify(job));
  return job;
}

/** status says err is a GmqError of that status whose message matches re. */
const status = (code, re = /./) => (err) => err instanceof GmqError && err.status === code && re.test(err.message);

test('after: the job waits for its dependencies, then runs with their results', { skip: noBroker }, async () => {
  const extract = topic('extract');
  const load = topic('load');
  const a = await c.push(extract, 'a', { id: `${extract}-a`, ttr: 30 });
  const b = await c.push(extract, 'b', { id: `${extract}-b`, ttr: 30 });
  const id = await c.push(load, 'l', { ttr: 30, after: [a, { id: b }], withResults: true });
  // The view names its dependencies by number.
  const [na, nb] = await Promise.all([a, b].map(async (dep) => String((await c.getJob(dep)).internal_id)));
  let dependent = await c.getJob(id);
  assert.equal(dependent.state, 'waiting');
  assert.deepEqual(dependent.after, [na, nb]);
  assert.deepEqual([...dependent.waiting_for].sort(), [na, nb].sort());
  assert.equal(await c.pop(load, { timeout: 0.2 }), null);

  await c.ack(await popAs(extract, a), { result: { rows: 120 } });
  await c.ack(await popAs(extract, b));
  const job = await popAs(load, id);
  assert.equal(job.body, 'l');
  dependent = await c.getJob(id);
  assert.deepEqual(dependent.dependency_results, { [na]: { rows: 120 }, [nb]: null });
  await c.ack(job);

  await assert.rejects(c.push(load, 'x', { after: ['no-such-job'] }), status(400, /after: job .*not found/));
  const plain = await c.push(load, 'no deps', { after: [] }); // an empty after is none
  assert.equal((await popAs(load, plain)).after, undefined);
});

test("after: a dependency that dies cancels the job, or lets it run ('run')", { skip: noBroker }, async () => {
  const t = topic('dep-fails');
  const next = topic('dep-fails-next');
  const dep = await c.push(t, 'd', { ttr: 30, retry: { maxAttempts: 1 } });
  const cancelled = await c.push(next, 'cancelled', { after: [dep] });
  const runs = await c.push(next, 'runs', { after: [dep], onDependencyFailure: 'run' });
  assert.equal((await c.getJob(runs)).on_dependency_failure, 'run');
  assert.equal((await c.fail(await popAs(t, dep), 'broken')).state, 'dead');
  assert.equal((await popAs(next, runs)).body, 'runs');
  const gone = await until(async () => {
    const j = await c.getJob(cancelled);
    return (j === null || j.state === 'cancelled') && { j };
  }, 5000, 'the dependent cancelled');
  if (gone.j) assert.match(gone.j.last_error, /dependency .* dead/);
  assert.equal(await c.pop(next, { timeout: 0.2 }), null);
});

test("then and onDead: a job's own follow-ups, pushed when it completes, when it dies", { skip: noBroker }, async () => {
  const t = topic('resize');
  const thumbs = topic('thumbs');
  const alerts = topic('alerts');
  const id = await c.push(t, { img: 9 }, {
    ttr: 30,
    then: [{ topic: thumbs, body: { img: 9 }, withResult: true, then: [{ topic: alerts, body: 'img 9 ready' }] }],
    onDead: [{ topic: alerts, body: 'img 9 failed' }],
  });
  const view = await c.getJob(id);
  assert.equal(view.then.length, 1);
  assert.equal(view.on_dead.length, 1);
  await c.ack(await popAs(t, id), { result: { size: 64 } });
  const thumb = await popAs(thumbs, view.then[0]);
  assert.deepEqual(thumb.body, { body: { img: 9 }, result: { size: 64 } });
  await c.ack(thumb);
  assert.equal((await c.pop(alerts, { timeout: 5 }))?.body, 'img 9 ready');

  const [dies] = await c.pushBatch([{ topic: t, body: 'x', ttr: 30, retry: { maxAttempts: 1 }, onDead: [{ topic: alerts, body: 'x died' }] }]);
  const dying = await c.getJob(dies);
  await c.fail(await popAs(t, dies), 'broken');
  const alert = await popAs(alerts, dying.on_dead[0]);
  assert.equal(alert.body, 'x died');
  await c.ack(alert);

  // An ack's own follow-up takes the result too.
  const crawled = await c.push(t, { url: '/a' }, { ttr: 30 });
  const [index] = await c.ack(await popAs(t, crawled), { result: { links: 12 }, push: [{ topic: thumbs, body: 'index', withResult: true }] });
  assert.deepEqual((await popAs(thumbs, index)).body, { body: 'index', result: { links: 12 } });

  await assert.rejects(c.push(t, 'x', { onDead: [{ topic: alerts, body: 'y', withResult: true }] }), status(400, /on_dead/));
});

test('a batch: its onComplete comes once with the summary; getBatch shows it done', { skip: noBroker }, async () => {
  const parts = topic('parts');
  const done = topic('parts-done');
  const { id, ids } = await c.createBatch({
    jobs: [{ topic: parts, body: 'part 1', ttr: 30 }, { topic: parts, body: 'part 2', ttr: 30 }],
    onComplete: { topic: done, body: { email: 'ops@example.com' }, withResult: true },
    meta: { report: 42 },
    withResults: true,
  });
  assert.equal(ids.length, 2);
  let batch = await c.getBatch(id);
  assert.deepEqual([batch.id, batch.state, batch.total, batch.pending, batch.completed], [id, 'closed', 2, 2, 0]);
  for (const [i, want] of ids.entries()) {
    const job = await popAs(parts, want);
    assert.equal(job.batch, id);
    await c.ack(job, { result: { pages: i + 3 } });
  }
  const callback = await c.pop(done, { timeout: 10 });
  assert.ok(callback, 'no onComplete within 10 s');
  const { body, result } = callback.body;
  assert.deepEqual(body, { email: 'ops@example.com' });
  assert.equal(result.batch, id);
  assert.equal(result.state, 'done');
  assert.equal(result.completed, 2);
  assert.deepEqual(result.meta, { report: 42 });
  assert.deepEqual(result.results, { [ids[0]]: { pages: 3 }, [ids[1]]: { pages: 4 } });
  await c.ack(callback);
  batch = await c.getBatch({ id });
  assert.deepEqual([batch.state, batch.completed, batch.pending, batch.dead], ['done', 2, 0, 0]);
  assert.ok(batch.finished_at);
  assert.equal(batch.callbacks.on_complete, callback.id);
  assert.equal(await c.pop(done, { timeout: 1.5 }), null, 'onComplete came twice');
});

test('a batch with a death: onDeath and onComplete come, onSuccess does not', { skip: noBroker }, async () => {
  const t = topic('risky');
  const cb = topic('risky-callbacks');
  const { id, ids } = await c.createBatch({
    jobs: [{ topic: t, body: 'fine', ttr: 30 }, { topic: t, body: 'dies', ttr: 30, retry: { maxAttempts: 1 } }],
    onComplete: { topic: cb, body: 'complete' },
    onSuccess: { topic: cb, body: 'success' },
    onDeath: { topic: cb, body: 'death', withResult: true },
  });
  await c.ack(await popAs(t, ids[0]));
  await c.fail(await popAs(t, ids[1]), 'broken');
  const seen = [];
  for (;;) {
    const job = await c.pop(cb, { timeout: seen.length < 2 ? 10 : 1.5 });
    if (!job) break;
    seen.push(typeof job.body === 'string' ? job.body : job.body.body);
    if (job.body.body === 'death') assert.equal(job.body.result.dead, 1);
    await c.ack(job);
  }
  assert.deepEqual(seen.sort(), ['complete', 'death']);
  const batch = await c.getBatch(id);
  assert.equal(batch.dead, 1);
  assert.deepEqual(batch.dead_jobs, { [ids[1]]: 'broken' });
});

test('an open batch takes jobs until it is closed; cancelBatch cancels it; errors', { skip: noBroker }, async () => {
  const later = topic('later');
  const open = await c.createBatch({ open: true });
  assert.deepEqual(open.ids, []);
  assert.equal((await c.getBatch(open)).state, 'open');
  const added = await c.addToBatch(open.id, [{ topic: later, body: 'x', delay: 3600 }, { topic: later, body: 'y', delay: 3600 }]);
  assert.equal(added.length, 2);
  assert.equal((await c.getJob(added[0])).batch, open.id);
  const closed = await c.closeBatch(open.id);
  assert.deepEqual([closed.state, closed.total, closed.pending], ['closed', 2, 2]);
  assert.equal((await c.closeBatch(open.id)).state, 'closed'); // again: nothing changes
  assert.equal(await c.cancelBatch(open.id), 2);
  assert.equal((await c.getBatch(open.id)).state, 'cancelled');
  assert.equal(await c.cancelBatch(open.id), 0);
  await assert.rejects(c.addToBatch(open.id, [{ topic: later, body: 'z' }]), status(409));
  await assert.rejects(c.closeBatch(open.id), status(409));

  await assert.rejects(c.getBatch('12345'), status(404));
  await assert.rejects(c.createBatch({ jobs: [{ body: 'no topic' }] }), status(400));
  await assert.rejects(c.createBatch({ jobs: [{ topic: later, body: 'x' }], onComplete: { topic: later, body: 'y', after: ['1'] } }), status(400));
  await assert.rejects(c.getBatch(''), TypeError);
  await assert.rejects(c.createBatch({ jobs: 'not a list' }), TypeError);
});

test('listBatches: the newest batch first, and how many are kept; past the newest 5,000 a 400', { skip: noBroker }, async () => {
  // Other test files make batches on this broker meanwhile (the examples'
  // batch.js): so ours is among the newest, and the total at least one more.
  const before = (await c.listBatches()).total;
  const { id } = await c.createBatch({ open: true, meta: { listed: true } });
  const page = await c.listBatches({ limit: 10 });
  assert.equal(page.offset, 0);
  assert.ok(page.total >= before + 1, `total ${page.total}, before ${before}`);
  const ours = page.batches.find((b) => b.id === id);
  assert.deepEqual([ours?.state, ours?.meta], ['open', { listed: true }]);
  const times = page.batches.map((b) => Date.parse(b.created_at));
  assert.deepEqual(times, [...times].sort((x, y) => y - x)); // newest first
  const one = await c.listBatches({ offset: 1, limit: 1 });
  assert.equal(one.offset, 1);
  assert.ok(one.batches.length <= 1);
  await assert.rejects(c.listBatches({ offset: 5000 }), status(400));
  await assert.rejects(c.listBatches({ offset: 5000, limit: 1 }), status(400));
  await c.cancelBatch(id);
});
