// The transport: one JSON request to gmq, its time limit, and its retries on
// 503. It decides nothing about what an answer means; the Client does.

import { setTimeout as sleep } from 'node:timers/promises';
import { GmqError } from './errors.js';

export const userAgent = 'gmq-client-node/0.1.0'; // the version in package.json (test/retry.test.js checks)

/**
 * An Answer is what gmq said: its status, its JSON body (null for 204 or
 * an empty body), and how many tries it took (a retried call reads some
 * answers differently: 409 on a push with a client id, 404 on an ack).
 * @typedef {{status: number, body: any, tries: number, retryAfter: number | null}} Answer
 */

/**
 * A Request is one call: what to send and how long it may wait for a job.
 * retryAs, when set, is asked before each retry what to send instead (an
 * ack-and-pop whose ack went through retries only its pop), or null not
 * to retry at all (a batch push that stored some of its jobs).
 * @typedef {{method: string, path: string, payload?: unknown, wait?: number,
 *   signal?: AbortSignal, retryAs?: (answer: Answer, req: Request) => Request | null}} Request
 */

export class Transport {
  /**
   * @param {{url: string, token?: string, timeout: number, retries: number, retryMaxDelay: number}} opts
   *   durations in seconds
   */
  constructor(opts) {
    this.base = opts.url.replace(/\/+$/, '');
    this.token = opts.token;
    this.timeout = opts.timeout;
    this.retries = opts.retries;
    this.retryMaxDelay = opts.retryMaxDelay;
  }

  /**
   * Sends req, again after each 503 (the only answer that promises nothing
   * either way, so the same request may be sent again) up to retries times,
   * waiting as retryDelay says. Any other answer, or the last 503, is
   * returned for the caller to read; no answer at all throws a GmqError of
   * status 0, and the caller's signal aborting throws its reason.
   * @param {Request} req
   * @returns {Promise<Answer>}
   */
  async call(req) {
    for (let tries = 1; ; tries++) {
      const answer = await this.#once(req, tries);
      if (answer.status !== 503 || tries > this.retries) return answer;
      const next = req.retryAs ? req.retryAs(answer, req) : req;
      if (!next) return answer;
      await pause(this.retryDelay(tries, answer.retryAfter), req.signal);
      req = next;
    }
  }

  /**
   * retryDelay is the wait in seconds before retry number n (1, 2, …): the
   * longer of gmq's Retry-After and a backoff doubling from half a second,
   * capped at retryMaxDelay so a long outage is polled, not slept through.
   * @param {number} n
   * @param {number | null} retryAfter seconds, when the answer said
   */
  retryDelay(n, retryAfter) {
    const backoff = 0.5 * 2 ** (n - 1);
    return Math.min(Math.max(retryAfter ?? 0, backoff), this.retryMaxDelay);
  }

  /** @param {Request} req @param {number} tries @returns {Promise<Answer>} */
  async #once(req, tries) {
    const limit = this.timeout + (req.wait ?? 0); // a long poll waits, then works
    const what = `${req.method} ${req.path}`;
    const { signal, done } = deadline(limit, req.signal);
    try {
      const res = await fetch(this.base + req.path, {
        method: req.method,
        headers: this.#headers(req.payload !== undefined),
        body: req.payload === undefined ? undefined : JSON.stringify(req.payload),
        signal,
      });
      const text = await res.text();
      return { status: res.status, body: parse(res.status, text, what), tries,
        retryAfter: parseRetryAfter(res.headers.get('retry-after')) };
    } catch (err) {
      if (req.signal?.aborted) throw req.signal.reason;
      if (err instanceof GmqError) throw err;
      if (signal.aborted) throw new GmqError(0, `${what}: no answer within ${limit} s`, { cause: err });
      const why = err?.cause?.message ?? err?.message ?? String(err);
      throw new GmqError(0, `${what}: ${why}`, { cause: err });
    } finally {
      done();
    }
  }

  #headers(hasBody) {
    const h = { 'User-Agent': userAgent, Accept: 'application/json' };
    if (hasBody) h['Content-Type'] = 'application/json'; // the broker refuses other types (415)
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    return h;
  }
}

/**
 * pause waits seconds, or throws signal's reason as soon as it aborts.
 * @param {number} seconds
 * @param {AbortSignal} [signal]
 */
export async function pause(seconds, signal) {
  try {
    await sleep(seconds * 1000, undefined, { signal });
  } catch (err) {
    throw signal?.aborted ? signal.reason : err;
  }
}

/**
 * deadline is a signal that aborts after seconds, or when parent does
 * (AbortSignal.any is Node 20's, so the two are joined by hand); done
 * releases its timer and listener.
 * @param {number} seconds
 * @param {AbortSignal} [parent]
 */
function deadline(seconds, parent) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), seconds * 1000);
  const onAbort = () => ac.abort(parent.reason);
  if (parent?.aborted) ac.abort(parent.reason);
  else parent?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: ac.signal,
    done() {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * parse reads an answer's body: JSON for a success (null when empty), and
 * for a failure {"error": ...} or, from something that is not gmq (a
 * proxy), the text itself.
 */
function parse(status, text, what) {
  if (status < 300) {
    if (text === '') return null;
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new GmqError(status, `${what}: the answer is not JSON: ${clip(text)}`, { cause: err });
    }
  }
  try {
    const body = JSON.parse(text);
    if (body && typeof body === 'object') return body;
  } catch {
    // not gmq's JSON: keep the text as the reason
  }
  return { error: clip(text.trim()) || `HTTP ${status}` };
}

/** parseRetryAfter reads Retry-After as seconds, or as an HTTP date. */
export function parseRetryAfter(value) {
  if (value == null || value === '') return null;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Number(value);
  const when = Date.parse(value);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

function clip(text) {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
