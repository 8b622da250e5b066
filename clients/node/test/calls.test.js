// Every call of the client against a live broker (GMQ_URL).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GmqError } from 'gmq-client';
import { client, noBroker, topic, until } from '../testdata/helpers.js';

const c = client();

/** popOne pops a job of t that must be there. */
async function popOne(t) {
  const job = await c.pop(t, { timeout: 2 });
  assert.ok(job, `no job in ${t}`);
  return job;
}

test('push, pop, ack', { skip: noBroker }, async () => {
  const t = topic('basic');
  const id = await c.push(t, 'hello', { ttr: 30, priority: 5 });
  const job = await popOne(t);
  assert.equal(job.id, id);
  assert.equal(job.body, 'hello');
  assert.equal(job.state, 'reserved');
  assert.equal(job.TTR, 30);
  assert.equal(job.priority, 5);
  assert.equal(job.attempt, 1);
  await c.ack(job);
  assert.equal(await c.getJob(id), null);
  assert.equal(await c.pop(t), null);
});

test('client ids: a second push of a live id is a 409', { skip: noBroker }, async () => {
  const t = topic('ids');
  const id = `order-${t}`;
  assert.equal(await c.push(t, 'once', { id }), id);
  await assert.rejects(c.push(t, 'twice', { id }), (err) => {
    assert.ok(err instanceof GmqError);
    assert.equal(err.status, 409);
    assert.equal(err.message, `push "${id}": a job already has this id (live, or completed and kept)`);
    return true;
  });
  assert.equal((await c.getJob(id)).body, 'once');
});

// The broker refuses a field it does not know (400): maxAttempts or expiresIn
// sent as they are written would fail the push.
test('delay, and the retry policy and expiry pushed as camelCase', { skip: noBroker }, async () => {
  const t = topic('delay');
  const id = await c.push(t, 'later', { delay: 60, expiresIn: 3600, retry: { maxAttempts: 2, backoff: 'fixed', base: 1 } });
  const job = await c.getJob(id);
  assert.equal(job.state, 'delayed');
  assert.ok(job.expires, 'no expiry');
  assert.equal(await c.pop(t), null);
});

test('pushBatch, popMany, ackMany with a stale job and a next batch', { skip: noBroker }, async () => {
  const t = topic('batch');
  const ids = await c.pushBatch(['0', '1', '2', '3', '4'].map((body) => ({ topic: t, body })));
  assert.equal(ids.length, 5);
  const jobs = await c.popMany(t, 3, { timeout: 1 });
  assert.deepEqual(jobs.map((j) => j.body), ['0', '1', '2']);
  const stale = { id: jobs[2].id, attempt: 9 }; // an older (here: unknown) delivery, by attempt alone
  const answer = await c.ackMany([jobs[0], jobs[1], stale], { topics: [t], count: 10, timeout: 1 });
  assert.deepEqual(answer.acked, [jobs[0].id, jobs[1].id]);
  assert.equal(answer.failed.length, 1);
  assert.equal(answer.failed[0].status, 409);
  assert.deepEqual(answer.jobs.map((j) => j.body), ['3', '4']);
  const rest = await c.ackMany([...answer.jobs, jobs[2]]);
  assert.equal(rest.acked.length, 3);
  assert.deepEqual(rest.failed, []);
  assert.equal(rest.jobs, undefined);
  assert.deepEqual(await c.popMany(t, 3, { timeout: 0.1 }), []);
});

test('ackAndPop acks and pops the next', { skip: noBroker }, async () => {
  const t = topic('ackpop');
  await c.pushBatch([{ topic: t, body: 'a' }, { topic: t, body: 'b' }]);
  const a = await popOne(t);
  const b = await c.ackAndPop(a, t, { timeout: 1 });
  assert.equal(b.body, 'b');
  assert.equal(await c.getJob(a.id), null);
  assert.equal(await c.ackAndPop(b, [t], { timeout: 0.1 }), null);
});

test('fail records the message; failMany; past max_attempts the job is dead', { skip: noBroker }, async () => {
  const t = topic('fail');
  await c.push(t, 'flaky', { retry: { maxAttempts: 2, backoff: 'fixed', base: 0.01 } });
  let job = await popOne(t);
  const failed = await c.fail(job, new Error('smtp 550'));
  assert.equal(failed.state, 'delayed');
  assert.equal(failed.last_error, 'smtp 550');
  assert.equal((await c.getJob(job.id)).failures, 1);
  job = await popOne(t);
  assert.equal(job.attempt, 2);
  const answer = await c.failMany([job, 'nobody'], 'smtp 550 again');
  assert.equal(answer.jobs[0].state, 'dead');
  assert.equal(answer.jobs[0].last_error, 'smtp 550 again');
  assert.equal(answer.failed[0].id, 'nobody');
  assert.equal(answer.failed[0].status, 404);
});

test('touch, release, bury', { skip: noBroker }, async () => {
  const t = topic('actions');
  const id = await c.push(t, 'x', { ttr: 5 });
  let job = await popOne(t);
  const touched = await c.touch(job);
  assert.equal(touched.state, 'reserved');
  assert.ok(touched.time_left > 4, `time_left ${touched.time_left}`);
  const released = await c.release(job, { delay: 60, priority: 7 });
  assert.equal(released.state, 'delayed');
  assert.equal(released.priority, 7);
  await assert.rejects(c.release(job), (err) => err.status === 409); // not reserved any more
  await c.push(t, 'y', { id: `${id}-b` });
  job = await popOne(t);
  const buried = await c.bury(job);
  assert.equal(buried.state, 'buried');
  assert.equal(await c.pop(t), null);
});

test('update a waiting job', { skip: noBroker }, async () => {
  const t = topic('update');
  const id = await c.push(t, 'draft', { delay: 3600, priority: 10 });
  const job = await c.update(id, { delay: 0, priority: 1, body: 'final' });
  assert.equal(job.state, 'ready');
  assert.equal(job.priority, 1);
  assert.equal(job.body, 'final');
  const popped = await popOne(t);
  assert.equal(popped.id, id);
  await assert.rejects(c.update(popped, { priority: 5 }), (err) => err.status === 409 && err.message.startsWith(`update "${id}"`));
  // A misspelt change is refused by name, not dropped.
  await assert.rejects(c.update(id, { priority: 2, dealy: 0 }), (err) => err.status === 400 && err.message.includes('dealy'));
});

test('unique pushes: a held key is a 409 naming its holder; replace and debounce change the waiting job', { skip: noBroker }, async () => {
  const t = topic('unique');
  const first = await c.push(t, 'hi', { id: `welcome-${t}`, unique: { key: 'user-42', for: 600 } });
  assert.equal(first.id, `welcome-${t}`);
  assert.ok(first.internal_id > 0);
  assert.equal(first.unique, undefined);
  await assert.rejects(c.push(t, 'hi again', { unique: { key: 'user-42', for: 600, mode: 'reject' } }), (err) => {
    assert.ok(err instanceof GmqError);
    assert.equal(err.status, 409);
    assert.equal(err.heldBy, `welcome-${t}`);
    return true;
  });

  const daily = { key: 'daily', for: 600, mode: 'replace' };
  const report = await c.push(`${t}-reports`, 'v1', { delay: 3600, unique: daily });
  const again = await c.push(`${t}-reports`, 'v2', { id: `not-used-${t}`, unique: daily });
  assert.deepEqual(again, { id: report.id, internal_id: report.internal_id, unique: 'replaced' });
  const popped = await popOne(`${t}-reports`);
  assert.equal(popped.id, report.id);
  assert.equal(popped.body, 'v2');
  const debounce = { key: 'index', for: 60, mode: 'debounce' };
  const index = await c.push(`${t}-index`, 'x', { delay: 5, unique: debounce });
  assert.equal((await c.push(`${t}-index`, 'x', { delay: 5, unique: debounce })).unique, 'debounced');
  assert.equal((await c.getJob(index.id)).state, 'delayed');

  // A reserved holder is not changed: a fresh job takes the key.
  const fresh = await c.push(`${t}-reports`, 'v3', { unique: daily });
  assert.notEqual(fresh.id, report.id);
  assert.equal(fresh.unique, undefined);

  // gmq refuses a malformed unique by name; a batch may not repeat a key.
  await assert.rejects(c.push(t, 'x', { unique: { key: 'k', for: 60, windw: 5 } }), (err) => err.status === 400 && /windw/.test(err.message) && err.heldBy === undefined);
  await assert.rejects(c.push(t, 'x', { unique: { key: 'k' } }), (err) => err.status === 400 && /for is missing/.test(err.message));
  await assert.rejects(c.pushBatch(['a', 'b'].map((body) => ({ topic: t, body, unique: { key: 'k', for: 60 } }))), (err) => err.status === 400);
});

test('groups: pushed (one, a batch), popped in turn, shown; a bad group is a 400 naming it', { skip: noBroker }, async () => {
  const t = topic('groups');
  // tenant-a has three jobs, tenant-b two: the pops take the groups in
  // turn, priority ordering a group's own jobs.
  await c.push(t, 'a3', { priority: 30, group: 'tenant-a' });
  await c.push(t, 'a1', { priority: 10, group: 'tenant-a' });
  await c.push(t, 'b1', { priority: 50, group: 'tenant-b', unique: { key: 'b1', for: 60 } });
  const [, b2] = await c.pushBatch([
    { topic: t, body: 'a2', priority: 20, group: 'tenant-a' },
    { topic: t, body: 'b2', priority: 60, group: 'tenant-b' },
  ]);
  assert.equal((await c.getJob(b2)).group, 'tenant-b');
  const popped = [];
  for (let i = 0; i < 5; i++) {
    const job = await popOne(t);
    popped.push(`${job.group}/${job.body}`);
  }
  assert.deepEqual(popped, ['tenant-a/a1', 'tenant-b/b1', 'tenant-a/a2', 'tenant-b/b2', 'tenant-a/a3']);

  // popMany's jobs carry their groups; a job without one has no group.
  await c.push(`${t}-mail`, 'x', { group: 'tenant-é' });
  await c.push(`${t}-mail`, 'y');
  const jobs = Object.fromEntries((await c.popMany(`${t}-mail`, 2, { timeout: 1 })).map((j) => [j.body, j]));
  assert.equal(jobs.x.group, 'tenant-é');
  assert.equal('group' in jobs.y, false);

  // A bad group is a 400 naming it; 200 bytes is good; gmq refuses a misspelt option by name.
  for (const bad of ['g'.repeat(201), 'tenant\n42', 'tenant\x7f']) {
    await assert.rejects(c.push(t, 'x', { group: bad }), (err) => err.status === 400 && /group/.test(err.message));
  }
  assert.ok(await c.push(`${t}-long`, 'x', { group: 'g'.repeat(200) }));
  await assert.rejects(c.push(t, 'x', { grup: 'tenant-a' }), (err) => err.status === 400 && /grup/.test(err.message));
});

test('cron schedules: fires, pause, fire now, overlap skip, reset, delete', { skip: noBroker }, async () => {
  const t = topic('schedules');
  const tick = `tick-${t}`;
  // A schedule every second pushes its job (written as push's options: ttr); the schedule shows the fire.
  let s = await c.setSchedule(tick, { cron: '* * * * * *', job: { topic: t, body: 'tick', ttr: 30, priority: 7, group: 'clock' } });
  assert.equal(s.name, tick);
  assert.equal(s.tz, 'UTC');
  assert.equal(s.overlap, 'allow');
  assert.equal(s.paused, false);
  assert.ok(s.next, 'no next fire');
  assert.deepEqual(s.job, { topic: t, body: 'tick', TTR: 30, priority: 7, delay: 0, group: 'clock' });
  let job = await c.pop(t, { timeout: 3 });
  assert.ok(job, 'the schedule pushed nothing');
  assert.equal(job.body, 'tick');
  assert.equal(job.TTR, 30);
  assert.equal(job.group, 'clock');
  await c.ack(job);
  s = await until(async () => {
    const got = await c.getSchedule(tick);
    return got.fires >= 1 && got.last_id && got.last && got;
  }, 3000, 'the fire shown');

  // Paused: no next fire and no job from the cron; a fire now still pushes.
  s = await c.setSchedule(tick, { paused: true });
  assert.equal(s.paused, true);
  assert.equal(s.next, undefined);
  while ((job = await c.pop(t))) await c.ack(job); // a fire may have come between the ack and the pause
  assert.equal(await c.pop(t, { timeout: 1.5 }), null, 'a paused schedule pushed');
  const fired = await c.fireSchedule(tick);
  assert.ok(fired.id && fired.internal_id > 0, JSON.stringify(fired));
  job = await popOne(t);
  assert.equal(job.id, fired.id);
  await c.ack(job);
  s = await c.getSchedule(tick);
  assert.equal(s.last_id, fired.id);
  assert.equal(s.next, undefined);

  // Overlap skip: while the last fire's job waits, a fire now is a 409.
  await c.setSchedule(tick, { overlap: 'skip' });
  const first = await c.fireSchedule(tick);
  await assert.rejects(c.fireSchedule(tick), (err) => err instanceof GmqError && err.status === 409 && /overlap skip/.test(err.message));
  job = await popOne(t);
  assert.equal(job.id, first.id);
  await c.ack(job);
  await c.fireSchedule(tick);

  // null takes a field out of the run-time layer: overlap back to allow.
  s = await c.setSchedule(tick, { cron: '0 0 1 1 *', overlap: null });
  assert.equal(s.overlap, 'allow');
  assert.equal(s.cron, '0 0 1 1 *');
  assert.equal('overlap' in s.run, false);
  await c.setSchedule(`other-${t}`, { cron: '@daily', tz: 'Europe/Berlin', job: { topic: t, body: 'x' } });
  const mine = (await c.schedules()).filter((x) => x.name.endsWith(t)).map((x) => [x.name, x.tz]);
  assert.deepEqual(mine, [[`other-${t}`, 'Europe/Berlin'], [tick, 'UTC']]);

  // Deleted: a 404 from each, getSchedule too (it was null, where the
  // other clients raise).
  await c.deleteSchedule(tick);
  await assert.rejects(c.getSchedule(tick), (err) => err.status === 404);
  await assert.rejects(c.deleteSchedule(tick), (err) => err.status === 404);
  await assert.rejects(c.fireSchedule(tick), (err) => err.status === 404);
});

test('a bad schedule is a 400 that says what is wrong', { skip: noBroker }, async () => {
  const t = topic('badschedule');
  const job = { topic: t, body: 'x' };
  for (const [changes, says] of [
    [{ job }, /cron is missing/],
    [{ cron: '@daily' }, /job is missing/],
    [{ cron: '61 * * * *', job }, /cron/],
    [{ cron: '@daily', tz: 'Mars/Olympus', job }, /tz/],
    [{ cron: '@daily', job, overlap: 'never' }, /overlap/],
    [{ cron: '@daily', job: { ...job, id: 'a-1' } }, /"id"/],
    [{ cron: '@daily', job, every: 5 }, /"every"/],
    [{}, /no field given/],
  ]) {
    await assert.rejects(c.setSchedule(`bad-${t}`, changes), (err) => err.status === 400 && says.test(err.message), JSON.stringify(changes));
  }
  await assert.rejects(c.setSchedule('bad~name', { cron: '@daily', job }), (err) => err.status === 400);
  await assert.rejects(c.setSchedule(`bad-${t}`, { cron: '@daily', job: { topic: t, body: 42 } }), TypeError);
});

test('releaseUnique frees a held key: the next push makes a new job; a key not held is a 404', { skip: noBroker }, async () => {
  const t = topic('release');
  for (const key of ['user-42', 'a/b c%']) {
    const unique = { key, for: 3600 };
    const held = await c.push(t, 'hi', { unique });
    await assert.rejects(c.push(t, 'hi', { unique }), (err) => err.status === 409 && err.heldBy === held.id);
    await c.releaseUnique(t, key);
    const again = await c.push(t, 'hi', { unique });
    assert.notEqual(again.id, held.id);
  }
  await assert.rejects(c.releaseUnique(t, 'nobody'), (err) => err instanceof GmqError && err.status === 404);
});

test("an unknown job's action is a GmqError with gmq's reason", { skip: noBroker }, async () => {
  await assert.rejects(c.ack({ id: 'nobody', attempt: 1 }), (err) => {
    assert.ok(err instanceof GmqError);
    assert.equal(err.status, 404);
    assert.equal(err.message, 'ack "nobody": not found');
    return true;
  });
  assert.equal(await c.getJob('nobody'), null);
  await assert.rejects(c.push(topic('bad'), 'x', { dealy: 5 }), (err) => err.status === 400 && /dealy/.test(err.message));
});

test('JSON bodies: an object or array pops back as one; a string stays a string', { skip: noBroker }, async () => {
  const t = topic('json');
  const bodies = [
    { to: 'ada', tags: ['new'], n: 1.5, ok: true, none: null, name: 'Zoë' },
    [1, 'two', {}],
    {},
    '{"to":"ada"}', // a string holding JSON
    '[1, 2]',
  ];
  for (const body of bodies) await c.push(t, body);
  await c.pushBatch([{ topic: t, body: { batch: 1 } }, { topic: t, body: 'plain' }]);
  for (const want of bodies) {
    const job = await popOne(t);
    assert.deepEqual(job.body, want);
    await c.ack(job);
  }
  const jobs = await c.popMany(t, 5, { timeout: 1 });
  assert.deepEqual(jobs.map((j) => j.body), [{ batch: 1 }, 'plain']);
  await c.ackMany(jobs);

  // A waiting job's body changed to JSON, and back to a string.
  const id = await c.push(t, 'draft', { delay: 3600 });
  assert.deepEqual((await c.update(id, { body: { final: true } })).body, { final: true });
  assert.equal((await c.update(id, { body: '{"final":true}' })).body, '{"final":true}');
  await c.update(id, { delay: 0, body: ['last'] });
  assert.deepEqual((await popOne(t)).body, ['last']);

  // A schedule's job with a JSON body: shown and fired as one.
  const name = `json-${t}`;
  const s = await c.setSchedule(name, { cron: '0 0 1 1 *', job: { topic: t, body: { kind: 'yearly' } } });
  assert.deepEqual(s.job.body, { kind: 'yearly' });
  await c.fireSchedule(name);
  assert.deepEqual((await popOne(t)).body, { kind: 'yearly' });
  await c.deleteSchedule(name);
});
