// Worker: the consumer loop every gmq user writes, written once. Each of its
// loops pops a job with a long poll, runs the handler on it while keeping
// its reservation alive, and acks or fails it; stop() ends the loops without
// dropping a job in hand.

import { pause } from './http.js';
import { watch } from './outcomes.js';
import { checkResult, reason } from './wire.js';

/** The worker's defaults (seconds). */
export const workerDefaults = Object.freeze({
  concurrency: 1,
  pollTimeout: 30,
  timeout: 0, // no limit on a handler
  signals: Object.freeze(['SIGTERM', 'SIGINT']),
});

/** Pauses after a pop that failed (the broker unreachable): doubling, capped. */
const firstPause = 0.5;
const maxPause = 10;

/**
 * A Worker runs concurrency loops, each popping one job at a time from its
 * topics with a long poll of pollTimeout seconds and awaiting
 * handler(job):
 * - while the handler runs, the job is touched every TTR/2 seconds, so a
 *   handler may take longer than the job's TTR (the event loop must be free
 *   for the timer to fire);
 * - when the handler returns (or its promise resolves) the job is acked,
 *   with what it resolved to as the ack's result (undefined: none; see
 *   Client.ack), which gmq keeps with the job where its topic keeps
 *   completed jobs. A result JSON.stringify throws on, or one over the
 *   topic's max_result (413), goes to onError and is dropped, and the job
 *   acked without it: it was done, and is not run again for its result.
 *   A Done it resolves to carries the result and follow-ups, jobs gmq
 *   pushes once the ack succeeds (see Done);
 *   when it throws (or rejects), the job is failed with the error's message,
 *   to be retried after its retry policy's backoff or go to the dead set;
 * - a job of TTR 0 was removed as it was popped: it is neither touched nor
 *   acked nor failed;
 * - with timeout (seconds, 0: none), or a job pushed with a timeout of its
 *   own (the shorter of the two where both are set), a handler still
 *   running after it has the signal it was given ({signal}, its second
 *   argument) aborted with a HandlerTimeoutError, and when it settles the
 *   job is failed with that error's message, whatever it returned
 *   (JavaScript cannot stop a function: a handler that ignores its signal
 *   runs on, its job touched);
 * - a job cancelled while its handler runs (Client.cancel) is learnt at
 *   the next touch (every TTR/2), at a progress call the handler makes
 *   through this worker's client (Client.progress, which then rejects with
 *   a GmqError 410), or at the ack or fail: a 410. The first two abort the
 *   handler's signal with a CancelledError. The job has ended, so it is
 *   neither acked nor failed, whatever the handler does, and
 *   options.onCancel is told (default: a line on stderr). A handler that
 *   finishes before its job's first touch is told nothing: its ack's 410
 *   goes to onCancel.
 * stop(), or SIGTERM or SIGINT (unless options.signals says otherwise),
 * ends the loops: no more pops (the long polls in flight are aborted), the
 * jobs in hand finish and are acked or failed, then done resolves. After a
 * first signal a second one gets Node's default (the process ends at once).
 *
 * Errors that are not the handler's (an ack refused, a pop that found the
 * broker down) go to options.onError and the loops carry on, pausing after
 * a failed pop. A pop refused for good (400, 401, 403 and other 4xx but
 * 408, 409 and 429: a wrong token, a bad topic name) stops the worker, and
 * done rejects with that error.
 */
export class Worker {
  #client;
  #topics;
  #handler;
  #pollTimeout;
  #timeout;
  #onError;
  #onFailure;
  #onCancel;
  #stop = new AbortController();
  #fatal = null;

  /**
   * done resolves when every loop has ended, after stop(): the jobs that
   * were in hand were acked or failed. It rejects with the error that
   * stopped the worker, if one did.
   * @type {Promise<void>}
   */
  done;

  /**
   * Use Client.worker.
   * @param {import('./client.js').Client} client
   * @param {string[]} topics
   * @param {(job: object) => unknown} handler
   * @param {{concurrency?: number, pollTimeout?: number, signals?: string[] | false,
   *   onError?: (err: unknown, job?: object) => void, onFailure?: (err: unknown, job: object) => void,
   *   onCancel?: (err: CancelledError, job: object) => void}} [options]
   */
  constructor(client, topics, handler, options = {}) {
    const opts = { ...workerDefaults, onError: logError, onFailure: logFailure, onCancel: logCancel, ...defined(options) };
    if (typeof handler !== 'function') throw new TypeError('a worker needs a handler: async (job) => { ... }');
    if (!(Number.isInteger(opts.concurrency) && opts.concurrency >= 1)) {
      throw new TypeError(`concurrency must be a whole number of at least 1, got ${opts.concurrency}`);
    }
    if (!(typeof opts.pollTimeout === 'number' && opts.pollTimeout >= 0)) {
      throw new TypeError(`pollTimeout must be a number of seconds, got ${opts.pollTimeout}`);
    }
    if (!(typeof opts.timeout === 'number' && opts.timeout >= 0)) {
      throw new TypeError(`timeout must be a number of seconds (0: none), got ${opts.timeout}`);
    }
    this.#client = client;
    this.#topics = topics;
    this.#handler = handler;
    this.#pollTimeout = opts.pollTimeout;
    this.#timeout = opts.timeout;
    this.#onError = opts.onError;
    this.#onFailure = opts.onFailure;
    this.#onCancel = opts.onCancel;
    const unlisten = listen(opts.signals || [], () => this.stop());
    const loops = Array.from({ length: opts.concurrency }, () => this.#loop());
    this.done = Promise.all(loops).then(() => {
      unlisten();
      if (this.#fatal) throw this.#fatal;
    });
  }

  /** stopping says stop() was called (or a signal came, or a fatal error). */
  get stopping() {
    return this.#stop.signal.aborted;
  }

  /**
   * stop ends the worker gracefully: no more pops, the jobs in hand are
   * finished and acked or failed. It returns done.
   * @returns {Promise<void>}
   */
  stop() {
    this.#stop.abort();
    return this.done;
  }

  async #loop() {
    const signal = this.#stop.signal;
    let failures = 0;
    while (!signal.aborted) {
      let job;
      try {
        job = await this.#client.pop(this.#topics, { timeout: this.#pollTimeout, signal });
        failures = 0;
      } catch (err) {
        if (signal.aborted) break; // stop() aborted the long poll
        if (isFatal(err)) {
          this.#fatal ??= err;
          this.#stop.abort();
          break;
        }
        this.#onError(err);
        failures++;
        await pause(Math.min(firstPause * 2 ** (failures - 1), maxPause), signal).catch(() => {});
        continue;
      }
      if (job) await this.#run(job);
    }
  }

  /**
   * run runs the handler on job, keeping it reserved, then acks or fails
   * it, unless the job was found cancelled meanwhile.
   */
  async #run(job) {
    const abort = new AbortController();
    let cancelled = null;
    const cancel = (how) => (err) => {
      cancelled ??= new CancelledError(how, err);
      abort.abort(cancelled);
    };
    const forget = this.#client[watch](job, cancel('its progress'));
    const keepAlive = this.#keepAlive(job, cancel('its touch'));
    let timedOut = null;
    const limit = handlerLimit(this.#timeout, job.timeout);
    const timer = limit > 0 ? setTimeout(() => abort.abort((timedOut = new HandlerTimeoutError(limit))), limit * 1000) : null;
    let failure = null;
    let result;
    try {
      result = await this.#handler(job, { signal: abort.signal });
    } catch (err) {
      failure = { err };
    } finally {
      clearTimeout(timer);
      await keepAlive.stop();
      forget();
    }
    if (!cancelled && failure?.err?.status === 410) cancelled = new CancelledError('a call of its handler', failure.err);
    if (cancelled) {
      this.#onCancel(cancelled, job);
      return;
    }
    if (timedOut) failure = { err: timedOut }; // whatever the handler did after its time
    if (!(job.TTR > 0)) return; // removed as it was popped: nothing to ack
    try {
      if (failure) await this.#client.fail(job, reason(failure.err));
      else {
        const done = result instanceof Done ? result : new Done({ result });
        await this.#ack(job, this.#sendable(job, done.result), done.push);
      }
    } catch (err) {
      if (err?.status !== 410) this.#onError(err, job);
      else this.#onCancel(new CancelledError(failure ? 'its fail' : 'its ack', err), job);
      return;
    }
    if (failure) this.#onFailure(failure.err, job);
  }

  /** sendable is the handler's result, or undefined (told to onError) when it is not JSON. */
  #sendable(job, result) {
    try {
      return checkResult(result);
    } catch (err) {
      this.#onError(new ResultError(`its result is not JSON (${err.message}): acked without it`, err), job);
      return undefined;
    }
  }

  /**
   * ack acks job with result and follow-ups (push). A result gmq refuses
   * as too big (413: the ack did nothing) is told to onError and dropped,
   * and the ack sent again without it. Follow-ups gmq refuses (400 or 413),
   * or that this client refuses to send (a TypeError: a body neither a
   * string, an object nor an array), fail the job, and onError is told
   * (see Done).
   */
  async #ack(job, result, push) {
    const follow = push.length > 0 ? push : undefined;
    try {
      try {
        await this.#client.ack(job, { result, push: follow });
      } catch (err) {
        if (result === undefined || err?.status !== 413) throw err;
        this.#onError(new ResultError(`its result is too big to keep (${err.message}): acked without it`, err), job);
        await this.#client.ack(job, { push: follow });
      }
    } catch (err) {
      if (!follow || (err?.status !== 400 && err?.status !== 413 && !(err instanceof TypeError))) throw err;
      this.#onError(new ResultError(`its follow-ups were refused (${err.message}): failed`, err), job);
      await this.#client.fail(job, err.message);
    }
  }

  /**
   * keepAlive touches job every TTR/2 seconds until stopped, one touch at a
   * time; stop waits for the touch in flight, so it cannot land after the
   * ack. A touch answered 410 (the job was cancelled) ends the touches and
   * calls onCancelled with its error.
   */
  #keepAlive(job, onCancelled) {
    const every = (job.TTR * 1000) / 2;
    if (!(every > 0)) return { stop: async () => {} };
    let last = Promise.resolve();
    const timer = setInterval(() => {
      last = last.then(() => this.#client.touch(job)).catch((err) => {
        if (err?.status !== 410) return this.#onError(err, job);
        clearInterval(timer);
        onCancelled(err);
      });
    }, every);
    return {
      stop() {
        clearInterval(timer);
        return last;
      },
    };
  }
}

/**
 * HandlerTimeoutError is the reason a handler's signal is aborted with when
 * it ran past the worker's timeout, and what its job is failed with.
 */
export class HandlerTimeoutError extends Error {
  /** @param {number} seconds the worker's timeout, or the job's when shorter */
  constructor(seconds) {
    super(`gmq: the handler ran out of time after ${seconds} s`);
    this.name = 'HandlerTimeoutError';
  }
}

/**
 * CancelledError is the reason a handler's signal is aborted with when its
 * job was cancelled while it ran (a 410 to the worker's touch, or to the
 * handler's progress), and what onCancel is told; its cause is the 410.
 */
export class CancelledError extends Error {
  /** @param {string} how the call that learnt it @param {unknown} cause */
  constructor(how, cause) {
    super(`gmq: the job was cancelled (learnt at ${how}): neither acked nor failed`, { cause });
    this.name = 'CancelledError';
  }
}

/**
 * Done is what a handler resolves to to end its job with follow-ups: the
 * worker acks the job with result (undefined: none) and push, jobs
 * (objects as push's options take them, with topic and body, but without
 * id or unique) that gmq pushes once the ack succeeds, each exactly once
 * (see Client.ack):
 *
 *   return new Done({ result: { shipped: true }, push: [{ topic: 'emails', body: job.body }] });
 *
 * Follow-ups gmq refuses (400, or 413 once the ack is sent without its
 * result) fail the job with gmq's reason, and onError is told (a
 * ResultError), so that it shows as the job's last_error and is tried
 * again by its retry policy, or dies: acking it without them would lose
 * what comes next.
 */
export class Done {
  /** @param {{result?: unknown, push?: Record<string, unknown>[]}} [options] */
  constructor({ result, push = [] } = {}) {
    if (!Array.isArray(push)) throw new TypeError("a Done's push is an array of jobs");
    this.result = result;
    this.push = push;
  }
}

/**
 * ResultError is what onError is told when a handler's result could not be
 * sent or kept, and its job was acked without it, or when its follow-ups
 * were refused, and its job failed; its cause is why.
 */
export class ResultError extends Error {
  /** @param {string} message @param {unknown} cause */
  constructor(message, cause) {
    super(message, { cause });
    this.name = 'ResultError';
  }
}

/**
 * listen calls onSignal on the first of signals, then forgets them all, so
 * that a second signal ends the process as Node does by default. It returns
 * a function that forgets them.
 */
function listen(signals, onSignal) {
  const forget = () => {
    for (const s of signals) process.removeListener(s, handler);
  };
  const handler = () => {
    forget();
    onSignal();
  };
  for (const s of signals) process.on(s, handler);
  return forget;
}

/**
 * handlerLimit is how long a handler may run on a job (0: no limit): the
 * worker's timeout or the job's own, the shorter where both are set.
 */
function handlerLimit(worker, own) {
  if (!(typeof own === 'number' && own > 0)) return worker;
  return worker > 0 ? Math.min(worker, own) : own;
}

/** defined is options without those given as undefined, which keep their defaults. */
export function defined(options) {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
}

/** isFatal says a pop will never succeed as it is: a 4xx but a timeout, a conflict or "too many". */
function isFatal(err) {
  const status = err?.status;
  return typeof status === 'number' && status >= 400 && status < 500 && ![408, 409, 429].includes(status);
}

/** logFailure is onFailure's default: a job the handler failed, said as the Go, Python and PHP workers say it. */
function logFailure(err, job) {
  console.error(`gmq worker: job ${job.id} (attempt ${job.attempt}) failed: ${reason(err)}`);
}

/** logCancel is onCancel's default: a job cancelled under its handler, said as the other clients' workers say it. */
function logCancel(err, job) {
  console.error(`gmq worker: job ${job.id} (attempt ${job.attempt}): ${err.message}`);
}

function logError(err, job) {
  const where = job ? ` (job ${job.id})` : '';
  const status = err?.status ? ` ${err.status}` : '';
  console.error(`gmq worker${where}:${status} ${err?.message ?? err}`);
}
