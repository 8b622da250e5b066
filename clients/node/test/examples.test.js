// The README's examples, run as processes against a live broker (GMQ_URL):
// the producer, the worker, a SIGTERM that lets the job in hand finish, a
// SIGKILL whose job comes back after its TTR, the unique pushes, the
// schedule, the report, the events, the pipeline and the batch.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { client, elapsed, noBroker, run, topic, until, url } from '../testdata/helpers.js';

const producer = fileURLToPath(new URL('../examples/producer.js', import.meta.url));
const worker = fileURLToPath(new URL('../examples/worker.js', import.meta.url));
const unique = fileURLToPath(new URL('../examples/unique.js', import.meta.url));
const schedule = fileURLToPath(new URL('../examples/schedule.js', import.meta.url));
const report = fileURLToPath(new URL('../examples/report.js', import.meta.url));
const events = fileURLToPath(new URL('../examples/events.js', import.meta.url));
const pipeline = fileURLToPath(new URL('../examples/pipeline.js', import.meta.url));
const batch = fileURLToPath(new URL('../examples/batch.js', import.meta.url));
const c = client();

/** mail is a job body the example worker takes. */
const mail = (to) => JSON.stringify({ to, subject: 'test' });

test('the producer pushes, the worker works every job, SIGTERM ends it with 0', { skip: noBroker }, async () => {
  const env = { GMQ_TOPIC: topic('examples') };
  const pushed = await run(producer, env).exit;
  assert.equal(pushed.code, 0, pushed.stderr);
  const ids = [...pushed.out.matchAll(/^pushed (\S+)$/gm)].map((m) => m[1]);
  assert.equal(ids.length, 5, pushed.out);
  assert.ok(ids.includes('receipt-order-42'));

  const again = await run(producer, env).exit; // the client id is stored once
  assert.match(again.out, /^receipt-order-42 is already queued$/m);

  const w = run(worker, env);
  try {
    for (const id of ids) await w.waitFor(new RegExp(`^sent ${id}$`));
    w.child.kill('SIGTERM');
    const end = await w.exit;
    assert.equal(end.code, 0, end.stderr);
    assert.match(end.out, /^stopped$/m);
    assert.doesNotMatch(end.stderr, /gmq worker/); // no error reported (Node 18 warns that fetch is experimental)
  } finally {
    w.stop();
  }
});

test('unique pushes, run twice: the digest queued then updated, the signup key held', { skip: noBroker }, async () => {
  const first = await run(unique).exit;
  assert.equal(first.code, 0, first.stderr);
  const digest = first.out.match(/^queued the digest (\S+)\nqueued the signup mail$/);
  assert.ok(digest, first.out);
  const second = await run(unique).exit;
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.out, new RegExp(`^updated the waiting digest ${digest[1]}\nthe signup mail is job \\S+ already$`));
});

test('the schedule, run twice: the report fired, then found waiting (a refused fire now counts as a skip)', { skip: noBroker }, async () => {
  const first = await run(schedule).exit;
  assert.equal(first.code, 0, first.stderr);
  const fired = first.out.match(
    /^daily-report fires next at \d{4}-\d\d-\d\dT0[78]:00:00Z\nfired daily-report now: job (\S+)\ndaily-report: '0 9 \* \* \*' in Europe\/Berlin, 1 fires, 0 skips, last job (\S+)$/,
  );
  assert.ok(fired && fired[1] === fired[2], first.out);
  const second = await run(schedule).exit;
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.out, new RegExp(`^daily-report fires next at \\S+\nthe last report still waits\ndaily-report: '0 9 \\* \\* \\*' in Europe/Berlin, 1 fires, 1 skips, last job ${fired[1]}$`));
  assert.equal((await c.getJob(fired[1])).topic, 'reports');
});

test("the report: made by a worker that returns a result, read back completed with it", { skip: noBroker }, async () => {
  const made = await run(report).exit;
  assert.equal(made.code, 0, made.stderr);
  const m = made.out.match(/^job (\d+) completed at \S+Z: \/r\/(\d+)\.pdf, 7 pages$/);
  assert.ok(m && m[1] === m[2], made.out);
});

test('the events: a job acked is printed with its result as it completes; SIGTERM ends it with 0', { skip: noBroker }, async () => {
  const env = { GMQ_TOPIC: topic('events') };
  const res = await fetch(`${url}/api/v1/topics/${env.GMQ_TOPIC}/config`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ events: true }),
  });
  assert.equal(res.status, 200, await res.text());
  const w = run(events, env);
  try {
    await w.waitFor(new RegExp(`^watching ${env.GMQ_TOPIC}$`));
    await c.push(env.GMQ_TOPIC, 'x', { id: 'export-9' });
    const job = await c.pop(env.GMQ_TOPIC, { timeout: 1 });
    await c.ack(job, { result: { url: '/r/9.pdf' } });
    await w.waitFor(/^job export-9 completed: \{"url":"\/r\/9\.pdf"\}$/);
    w.child.kill('SIGTERM');
    const end = await w.exit;
    assert.equal(end.code, 0, end.stderr);
    assert.match(end.out, /^stopped$/m);
  } finally {
    w.stop();
  }
});

test('the pipeline: load waits for extract, then gets its result; extract\'s then comes with it', { skip: noBroker }, async () => {
  const ran = await run(pipeline, { GMQ_TOPIC: topic('etl') }).exit;
  assert.equal(ran.code, 0, ran.stderr);
  assert.equal(ran.out, 'load is waiting\nday 5 extracted: 120 rows\nloading 120 rows');
});

test('the batch: its parts worked, its onComplete comes once with the summary', { skip: noBroker }, async () => {
  const env = { GMQ_TOPIC: topic('report') };
  const ran = await run(batch, env).exit;
  assert.equal(ran.code, 0, ran.stderr);
  assert.match(ran.out, /^batch \d+: 3 parts\nbatch done: 3 parts of report 42, 12 pages, mail ops@example\.com\nthe batch is done$/);
  assert.equal(await c.pop(`${env.GMQ_TOPIC}-done`, { timeout: 1.5 }), null, 'onComplete came twice');
});

test('SIGTERM mid-job: the job finishes, is acked, and the worker exits 0', { skip: noBroker }, async () => {
  const env = { GMQ_TOPIC: topic('sigterm') };
  const id = await c.push(env.GMQ_TOPIC, mail('ada@example.com'));
  const w = run(worker, env);
  try {
    await w.waitFor(new RegExp(`^sending ${id} `));
    w.child.kill('SIGTERM');
    const end = await w.exit;
    assert.equal(end.code, 0, end.stderr);
    assert.match(end.out, new RegExp(`^sent ${id}\nstopped$`, 'm'));
    assert.equal(await c.getJob(id), null, 'not acked');
  } finally {
    w.stop();
  }
});

test('a worker killed mid-job (SIGKILL): the job comes back after its TTR', { skip: noBroker }, async () => {
  const env = { GMQ_TOPIC: topic('sigkill') };
  const id = await c.push(env.GMQ_TOPIC, mail('alan@example.com'), { ttr: 1 });
  const w = run(worker, env);
  try {
    await w.waitFor(new RegExp(`^sending ${id} `));
    w.child.kill('SIGKILL');
    assert.equal((await w.exit).signal, 'SIGKILL');
  } finally {
    w.stop();
  }
  const { result: again, ms } = await elapsed(() => c.pop(env.GMQ_TOPIC, { timeout: 5 }));
  assert.ok(again, 'the job did not come back');
  assert.equal(again.id, id);
  assert.equal(again.attempt, 2);
  assert.equal(again.timeouts, 1);
  assert.ok(ms > 300, `back after ${ms} ms: before its TTR ran out?`);
  await c.ack(again);
});

test('a body that is not JSON: the example fails the job with the parse error', { skip: noBroker }, async () => {
  const env = { GMQ_TOPIC: topic('badbody') };
  const id = await c.push(env.GMQ_TOPIC, 'not json');
  const w = run(worker, env);
  try {
    const job = await until(async () => (await c.getJob(id))?.last_error && c.getJob(id), 5000, 'the failure');
    assert.match(job.last_error, /JSON/);
    assert.equal(job.failures, 1);
    w.child.kill('SIGTERM');
    assert.equal((await w.exit).code, 0);
  } finally {
    w.stop();
  }
});
