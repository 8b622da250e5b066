// Webhook signatures (HTTP push delivery), no broker: verifyWebhook on the
// Standard Webhooks spec's vector and on what gmq sends (rotation, the
// tolerance's bounds, tampering, bad secrets, missing headers, other
// versions, names in any case, the forms Node gives headers in); then the
// README's receiver, run as a process and sent signed deliveries.

import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { GmqError, WebhookVerificationError, verifyWebhook } from 'gmq-client';
import { run } from '../testdata/helpers.js';

// The spec's own example: passing it, a receiver checks what any Standard
// Webhooks sender signs.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const STAMP = '1614265330';
const BODY = '{"test": 2432232314}';
const SIG = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
const NOW = 1614265330;
const OTHER = `whsec_${Buffer.from('second-key-of-32-bytes----------').toString('base64')}`;

/** sign is what gmq sends: a v1 signature per key, space-separated (written here again, from the spec). */
function sign(secret, id, stamp, body) {
  return secret
    .split(' ')
    .map((s) => {
      const key = Buffer.from(s.slice('whsec_'.length), 'base64');
      return `v1,${createHmac('sha256', key).update(`${id}.${stamp}.${body}`).digest('base64')}`;
    })
    .join(' ');
}

const ROTATED = sign(`${SECRET} ${OTHER}`, ID, STAMP, BODY);
const OTHER_ONLY = sign(OTHER, ID, STAMP, BODY);
const V2 = `v2,${SIG.slice(3)}`; // the right bytes under another version: ignored

/** headers is the spec's delivery's headers as req.headers has them, with changes (undefined: left out). */
function headers(changes = {}) {
  const h = { 'webhook-id': ID, 'webhook-timestamp': STAMP, 'webhook-signature': SIG, ...changes };
  for (const [k, v] of Object.entries(h)) if (v === undefined) delete h[k];
  return h;
}

const upper = (h) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toUpperCase(), v]));

test("the spec's vector, as the test signs it", () => {
  assert.equal(sign(SECRET, ID, STAMP, BODY), SIG);
});

const PASS = 'pass';
const REFUSED = 'refused';
const BAD_SECRET = 'bad secret';
const cases = [
  ["the spec's vector", SECRET, headers(), BODY, NOW, PASS],
  ['the body as a Buffer', SECRET, headers(), Buffer.from(BODY), NOW, PASS],
  ['the body as a Uint8Array inside a larger buffer', SECRET, headers(), new Uint8Array(Buffer.from(`xx${BODY}yy`)).subarray(2, 2 + BODY.length), NOW, PASS],
  // Rotation: signed with both keys, checked with either; checked with
  // both, signed with either.
  ['signed with two, checked with the first', SECRET, headers({ 'webhook-signature': ROTATED }), BODY, NOW, PASS],
  ['signed with two, checked with the second', OTHER, headers({ 'webhook-signature': ROTATED }), BODY, NOW, PASS],
  ['signed with the old, checked with both', `${OTHER} ${SECRET}`, headers(), BODY, NOW, PASS],
  ['signed with the new, checked with both', `${SECRET}  ${OTHER}`, headers({ 'webhook-signature': OTHER_ONLY }), BODY, NOW, PASS],
  ['signed with another key only', SECRET, headers({ 'webhook-signature': OTHER_ONLY }), BODY, NOW, REFUSED],
  // The tolerance: 300 s either way passes, 301 s does not.
  ['300 s old', SECRET, headers(), BODY, NOW + 300, PASS],
  ['301 s old', SECRET, headers(), BODY, NOW + 301, REFUSED],
  ['300 s ahead', SECRET, headers(), BODY, NOW - 300, PASS],
  ['301 s ahead', SECRET, headers(), BODY, NOW - 301, REFUSED],
  ['300 s old, as a Date', SECRET, headers(), BODY, new Date((NOW + 300) * 1000), PASS],
  ['301 s old, as a Date', SECRET, headers(), BODY, new Date((NOW + 301) * 1000), REFUSED],
  // What is signed: the body's bytes, the id, the timestamp.
  ['a body changed', SECRET, headers(), '{"test": 2432232315}', NOW, REFUSED],
  ['a body re-encoded', SECRET, headers(), '{"test":2432232314}', NOW, REFUSED],
  ['an id changed', SECRET, headers({ 'webhook-id': `${ID}x` }), BODY, NOW, REFUSED],
  ['a timestamp changed', SECRET, headers({ 'webhook-timestamp': '1614265331' }), BODY, NOW, REFUSED],
  ['a signature changed', SECRET, headers({ 'webhook-signature': SIG.replace('g0h', 'g0i') }), BODY, NOW, REFUSED],
  ['a signature without its version', SECRET, headers({ 'webhook-signature': SIG.slice(3) }), BODY, NOW, REFUSED],
  ['a timestamp with a fraction', SECRET, headers({ 'webhook-timestamp': `${STAMP}.0` }), BODY, NOW, REFUSED],
  ['a timestamp with a sign', SECRET, headers({ 'webhook-timestamp': `+${STAMP}` }), BODY, NOW, REFUSED],
  ['a timestamp in hex', SECRET, headers({ 'webhook-timestamp': '0x60378df2' }), BODY, NOW, REFUSED],
  ['a timestamp in words', SECRET, headers({ 'webhook-timestamp': 'now' }), BODY, NOW, REFUSED],
  ['no webhook-id', SECRET, headers({ 'webhook-id': undefined }), BODY, NOW, REFUSED],
  ['no webhook-timestamp', SECRET, headers({ 'webhook-timestamp': undefined }), BODY, NOW, REFUSED],
  ['no webhook-signature', SECRET, headers({ 'webhook-signature': undefined }), BODY, NOW, REFUSED],
  ['an empty webhook-signature', SECRET, headers({ 'webhook-signature': '' }), BODY, NOW, REFUSED],
  ['no headers at all', SECRET, {}, BODY, NOW, REFUSED],
  // Versions: only v1 counts; a v2 beside a good v1 is no harm.
  ['only a v2 signature', SECRET, headers({ 'webhook-signature': V2 }), BODY, NOW, REFUSED],
  ['a v2 signature then a v1', SECRET, headers({ 'webhook-signature': `${V2} ${SIG}` }), BODY, NOW, PASS],
  ['a v1 signature then a v2', SECRET, headers({ 'webhook-signature': `${SIG} ${V2}` }), BODY, NOW, PASS],
  ['a v1 signature among junk', SECRET, headers({ 'webhook-signature': `v1,AAAA v1, , v1a,x ${SIG}` }), BODY, NOW, PASS],
  // Header names in any case, and the forms Node gives them in.
  ['upper-case names', SECRET, upper(headers()), BODY, NOW, PASS],
  ['a fetch Headers', SECRET, new Headers(upper(headers())), BODY, NOW, PASS],
  ['a Map', SECRET, new Map(Object.entries(headers())), BODY, NOW, PASS],
  ['two signatures joined with a comma (as Node joins a header sent twice)', SECRET,
    headers({ 'webhook-signature': `${OTHER_ONLY}, ${SIG}` }), BODY, NOW, PASS],
  ['a list of values', SECRET, headers({ 'webhook-signature': [OTHER_ONLY, SIG] }), BODY, NOW, PASS],
  // The caller's errors: a TypeError, not a refusal of the request.
  ['a secret without whsec_', SECRET.slice(6), headers(), BODY, NOW, BAD_SECRET],
  ['a secret not base64', 'whsec_not*base64', headers(), BODY, NOW, BAD_SECRET],
  ['a secret without its padding', OTHER.replace(/=+$/, ''), headers(), BODY, NOW, BAD_SECRET],
  ['an empty key', 'whsec_', headers(), BODY, NOW, BAD_SECRET],
  ['no secret', ' ', headers(), BODY, NOW, BAD_SECRET],
  ['a good secret and a bad one', `${SECRET} whsec_!!`, headers(), BODY, NOW, BAD_SECRET],
  ['a bad secret and no headers', SECRET.slice(6), {}, BODY, NOW, BAD_SECRET],
];

for (const [name, secret, h, body, now, want] of cases) {
  test(name, () => {
    let got = PASS;
    try {
      verifyWebhook(secret, h, body, { now });
    } catch (err) {
      if (err instanceof WebhookVerificationError) {
        got = REFUSED;
        assert.match(err.message, /^gmq webhook: /);
        assert.equal(err.name, 'WebhookVerificationError');
      } else if (err instanceof TypeError) {
        got = BAD_SECRET;
        assert.match(err.message, /secret/);
      } else {
        throw err;
      }
    }
    assert.equal(got, want);
  });
}

test('the tolerance is a parameter; the default now is the clock', () => {
  verifyWebhook(SECRET, headers(), BODY, { tolerance: 0, now: NOW });
  verifyWebhook(SECRET, headers(), BODY, { tolerance: 7200, now: NOW + 3600 });
  assert.throws(() => verifyWebhook(SECRET, headers(), BODY, { tolerance: 0, now: NOW + 1 }), /tolerance/);
  assert.throws(() => verifyWebhook(SECRET, headers(), BODY, { tolerance: 3600, now: NOW + 3601 }), WebhookVerificationError);
  assert.throws(() => verifyWebhook(SECRET, headers(), BODY, { tolerance: -1, now: NOW }), RangeError);
  // By the clock, the spec's vector (2021) is long expired; one signed now passes.
  assert.throws(() => verifyWebhook(SECRET, headers(), BODY), WebhookVerificationError);
  const now = String(Math.floor(Date.now() / 1000));
  const job = '{"id":"order-7","topic":"orders","body":{"sku":"A1"},"attempt":1}';
  verifyWebhook(OTHER, { 'webhook-id': 'order-7', 'webhook-timestamp': now, 'webhook-signature': sign(OTHER, 'order-7', now, job) }, job);
});

test('a parsed body is the caller\'s error, not a refusal', () => {
  assert.throws(() => verifyWebhook(SECRET, headers(), JSON.parse(BODY), { now: NOW }), TypeError);
  assert.ok(!(new WebhookVerificationError('x') instanceof GmqError)); // not an answer from gmq
});

test("the README's receiver: a signed delivery done and answered with its result, a tampered one refused", async () => {
  const pkg = createRequire(import.meta.url).resolve('gmq-client/package.json');
  const readme = readFileSync(join(dirname(pkg), 'README.md'), 'utf8');
  const block = readme.match(/<!-- receiver -->\s*```js\n([\s\S]*?)```/);
  assert.ok(block, 'README.md has no receiver block');
  const file = fileURLToPath(new URL('../receiver.js', import.meta.url)); // beside node_modules
  writeFileSync(file, block[1]);
  const r = run(file, { PORT: '0', GMQ_WEBHOOK_SECRET: `${SECRET} ${OTHER}` });
  try {
    const url = `${(await r.waitFor(/^listening on /)).slice('listening on '.length)}/jobs`;
    const job = '{"id":"order-7","internal_id":7,"topic":"orders","body":{"sku":"A1"},"attempt":1,"failures":0}';
    const deliver = async (sent, { secret = OTHER, method = 'POST' } = {}) => {
      const now = String(Math.floor(Date.now() / 1000));
      const res = await fetch(url, {
        method,
        body: method === 'POST' ? sent : undefined,
        headers: {
          'Content-Type': 'application/json',
          'webhook-id': 'order-7',
          'webhook-timestamp': now,
          'webhook-signature': sign(secret, 'order-7', now, job),
          'gmq-topic': 'orders',
        },
      });
      return { status: res.status, answer: await res.json() };
    };
    assert.deepEqual(await deliver(job), { status: 200, answer: { done: 'order-7' } });
    await r.waitFor(/^job order-7 of orders, attempt 1: \{"sku":"A1"\}$/);
    assert.deepEqual((await deliver(job, { secret: SECRET })).status, 200); // either of the two
    const tampered = await deliver(job.replace('A1', 'A2'));
    assert.equal(tampered.status, 401);
    assert.match(tampered.answer.error, /no v1 signature matches/);
    const foreign = await deliver(job, { secret: `whsec_${Buffer.from('not-the-topic-secret-16').toString('base64')}` });
    assert.equal(foreign.status, 401);
    assert.equal((await deliver(job, { method: 'GET' })).status, 405);
  } finally {
    r.stop();
    rmSync(file, { force: true });
  }
});
