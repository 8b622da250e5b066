// Events against a live broker (GMQ_URL), through a proxy to it (GMQ_PROXY)
// whose POST /-/cut drops every connection through it: node_test.go starts
// both, and names a topic and its events bucket (GMQ_EVENTS_TOPIC,
// GMQ_EVENTS_BUCKET). The iterator sees a job pushed, reserved and
// completed with its result; cut while it is suspended after the reserved
// event, it connects again with that event's id, and the ack and a push
// made meanwhile come, each once, then what follows. A position older than
// the bucket keeps comes as a lost event; types filter; an unknown type
// rejects with a 400.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, GmqError, LOST } from 'gmq-client';
import { client, noBroker, url } from '../testdata/helpers.js';

const c = client();
const proxy = process.env.GMQ_PROXY;
const t = process.env.GMQ_EVENTS_TOPIC;
const bucket = Number(process.env.GMQ_EVENTS_BUCKET);
const noProxy = noBroker || (proxy ? false : 'GMQ_PROXY is not set (go test ./clients/node/ starts one)');

/** call sends what the client has no call for (a topic's settings, the proxy's cut); resolves to the JSON answer. */
async function call(method, to, payload) {
  const res = await fetch(to, { method, headers: { 'Content-Type': 'application/json' }, body: payload && JSON.stringify(payload) });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

/** within rejects when promise has not settled within 10 s. */
function within(promise, what) {
  let timer;
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within 10 s`)), 10000)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** next is the iterator's next event, within 10 s. */
async function next(it) {
  const { value, done } = await within(it.next(), 'the next event');
  assert.ok(!done, 'the events ended');
  return value;
}

function expect(ev, type, id, attempt) {
  assert.equal(ev.type, type, JSON.stringify(ev));
  assert.equal(ev.topic, t, JSON.stringify(ev));
  assert.equal(ev.id, id, JSON.stringify(ev));
  assert.equal(ev.attempt, attempt, JSON.stringify(ev));
  assert.ok(ev.internal_id && ev.at && ev.eventId, JSON.stringify(ev));
  return ev;
}

test("a job's events, resumed after the connection is cut, none missed or repeated", { skip: noProxy }, async () => {
  await call('PUT', `${url}/api/v1/topics/${t}/config`, { events: true });
  let readies = 0;
  let ready;
  const connected = new Promise((resolve) => (ready = resolve));
  const ac = new AbortController();
  const it = new Client(proxy).events(t, { signal: ac.signal, onReady: () => ready(++readies) });
  try {
    const first = it.next(); // connects: the events of the pushes from here on come
    await within(connected, 'ready');
    await c.push(t, 'hi', { id: 'm-1', ttr: 30 });
    const pushed = await within(first, 'the pushed event');
    expect(pushed.value, 'pushed', 'm-1', 0);
    const job = await c.pop(t, { timeout: 1 });
    assert.equal(job?.id, 'm-1');
    expect(await next(it), 'reserved', 'm-1', 1);

    assert.deepEqual(await call('POST', `${proxy}/-/cut`), { cut: 1 });
    await c.ack(job, { result: { url: '/r/m-1' } });
    await c.push(t, 'hi', { id: 'm-2', ttr: 30 });
    const completed = expect(await next(it), 'completed', 'm-1', 1);
    assert.deepEqual(completed.result, { url: '/r/m-1' });
    expect(await next(it), 'pushed', 'm-2', 0);
    await c.push(t, 'hi', { id: 'm-3', ttr: 30 });
    expect(await next(it), 'pushed', 'm-3', 0);
    assert.equal(readies, 2, 'connected twice');
  } finally {
    ac.abort();
    await it.return();
  }

  const seen = [];
  for await (const ev of c.events(t, { types: ['completed'], lastEventId: `${bucket}:1-0` })) {
    if (seen.push(ev) === 2) break; // leaving the loop closes the stream
  }
  assert.equal(seen[0].type, LOST, JSON.stringify(seen[0]));
  assert.deepEqual(seen[0].buckets, [bucket]);
  assert.ok(seen[0].error && seen[0].eventId);
  expect(seen[1], 'completed', 'm-1', 1);

  await assert.rejects(c.events(t, { types: ['bogus'] }).next(), (err) => err instanceof GmqError && err.status === 400);
});
