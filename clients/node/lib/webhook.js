// Checking a webhook's signature, for HTTP push delivery (gmq's
// docs/workflows.md, "HTTP push delivery"): a topic with deliver_to POSTs
// each of its jobs to that URL, the body the job as JSON, signed with the
// topic's deliver_secret in the Standard Webhooks form
// (https://www.standardwebhooks.com):
//
//   webhook-id:        the job's number (never reused; gmq-job-id has its id)
//   webhook-timestamp: Unix seconds, when the request was made
//   webhook-signature: "v1,<base64 of HMAC-SHA256(key, id.timestamp.body)>"
//                      (two, space-separated, while the secret is rotated)
//
// A receiver checks the signature before it trusts the body: anyone who can
// reach its URL could otherwise make it do a job. The timestamp is signed
// too, so a recorded request is refused once it is older than the tolerance.

import { createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'whsec_';
/** Seconds a timestamp may be from now, either way, as Standard Webhooks advises. */
const TOLERANCE = 300;
// The standard alphabet with its padding, as the broker sends it
// (Buffer.from(s, 'base64') takes anything, and drops what it cannot read).
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * WebhookVerificationError is a delivery refused by verifyWebhook: a header
 * missing, a timestamp that is not a whole number or is too far from now,
 * no signature that matches. Answer such a request with a 4xx and do no
 * work. (Not a GmqError, which is an answer from gmq: here gmq is the
 * caller. A secret that is not one is a TypeError: the receiver is set up
 * wrong, not the request.)
 */
export class WebhookVerificationError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(`gmq webhook: ${message}`);
    this.name = 'WebhookVerificationError';
  }
}

/**
 * verifyWebhook checks a delivery's signature: it returns when one of its v1
 * signatures is body's under one of secret's keys, and throws a
 * WebhookVerificationError otherwise.
 *
 * secret is the topic's deliver_secret ("whsec_" and base64), or two of them
 * space-separated while it is rotated: a delivery signed with either passes.
 * headers is the request's: an IncomingMessage's req.headers, a fetch
 * Headers, a Map or a plain object, names in any case. body is the raw body
 * as received (a Buffer or Uint8Array, or a string taken as its UTF-8),
 * before any JSON parsing. now is a Unix time in seconds, or a Date
 * (default: the clock's); the timestamp may be up to tolerance seconds from
 * it, before or after (the bound itself passes). Signatures of versions
 * other than v1 are ignored, as Standard Webhooks says.
 *
 * @param {string} secret
 * @param {Headers | Map<string, string | string[]> | Record<string, string | string[] | undefined>} headers
 * @param {string | Uint8Array} body
 * @param {{tolerance?: number, now?: number | Date}} [options]
 */
export function verifyWebhook(secret, headers, body, { tolerance = TOLERANCE, now } = {}) {
  const keys = secretKeys(secret);
  if (typeof tolerance !== 'number' || !(tolerance >= 0)) {
    throw new RangeError(`gmq webhook: tolerance is a number of seconds, 0 or more, not ${tolerance}`);
  }
  const data = rawBody(body);
  const fields = headerFields(headers);
  const id = header(fields, 'webhook-id');
  const stamp = header(fields, 'webhook-timestamp');
  const signatures = header(fields, 'webhook-signature');
  if (!/^[0-9]+$/.test(stamp)) {
    throw new WebhookVerificationError(`webhook-timestamp ${JSON.stringify(stamp)} is not a whole number of seconds`);
  }
  const at = now === undefined ? Date.now() / 1000 : now instanceof Date ? now.getTime() / 1000 : now;
  if (typeof at !== 'number' || Number.isNaN(at)) throw new TypeError('gmq webhook: now is a Unix time in seconds, or a Date');
  const off = at - Number(stamp);
  // Both ways: a timestamp ahead of now would stretch a replay's window.
  if (!(Math.abs(off) <= tolerance)) {
    throw new WebhookVerificationError(`its timestamp ${stamp} is ${Math.round(off)} s from now, past the tolerance of ${tolerance} s`);
  }
  const want = keys.map((key) =>
    Buffer.from(createHmac('sha256', key).update(`${id}.${stamp}.`).update(data).digest('base64')),
  );
  // Every pair is compared, each in constant time: how long it takes says
  // nothing of how much of a signature was right.
  let matched = false;
  for (const field of signatures.split(/\s+/)) {
    // A signature header sent twice comes joined with ", " in Node's headers.
    const sig = field.replace(/,$/, '');
    const comma = sig.indexOf(',');
    if (comma < 0 || sig.slice(0, comma) !== 'v1') continue;
    const got = Buffer.from(sig.slice(comma + 1));
    for (const w of want) {
      if (got.length === w.length && timingSafeEqual(got, w)) matched = true;
    }
  }
  if (!matched) throw new WebhookVerificationError('no v1 signature matches the secret');
}

/** secretKeys is secret's keys: the decoded bytes after "whsec_", never the text. */
function secretKeys(secret) {
  if (typeof secret !== 'string') {
    throw new TypeError(`gmq webhook: the secret is a string, whsec_ followed by base64, not ${typeof secret}`);
  }
  const keys = secret.split(/\s+/).filter(Boolean).map((s, i) => {
    if (!s.startsWith(PREFIX)) {
      throw new TypeError(`gmq webhook: secret ${i + 1} does not start with "${PREFIX}": give the topic's deliver_secret as it is, ${PREFIX} followed by base64`);
    }
    const encoded = s.slice(PREFIX.length);
    if (encoded === '' || !BASE64.test(encoded)) {
      throw new TypeError(`gmq webhook: secret ${i + 1} is not ${PREFIX} followed by the standard base64 (with padding) of its key`);
    }
    return Buffer.from(encoded, 'base64');
  });
  if (keys.length === 0) {
    throw new TypeError("gmq webhook: no secret: give the topic's deliver_secret (whsec_...), or two space-separated while rotating");
  }
  return keys;
}

/** rawBody is body's bytes: a string's UTF-8, or a Buffer's or Uint8Array's own. */
function rawBody(body) {
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('gmq webhook: body is the raw body as received, a Buffer or a string, not parsed JSON: the signature is over the bytes sent');
}

/** headerFields is headers' values by lower-case name. */
function headerFields(headers) {
  if (headers === null || typeof headers !== 'object') {
    throw new TypeError('gmq webhook: headers is the request\'s headers: req.headers, a Headers or a plain object');
  }
  const entries = typeof headers.entries === 'function' ? headers.entries() : Object.entries(headers);
  const fields = new Map();
  for (const [name, value] of entries) {
    const key = String(name).toLowerCase();
    const values = fields.get(key) ?? [];
    for (const v of Array.isArray(value) ? value : [value]) {
      if (typeof v === 'string' || typeof v === 'number') values.push(String(v));
    }
    fields.set(key, values);
  }
  return fields;
}

/** header is a header's values, space-separated; refused when there is none. */
function header(fields, name) {
  const value = (fields.get(name) ?? []).join(' ').trim();
  if (value === '') throw new WebhookVerificationError(`no ${name} header`);
  return value;
}
