// Client: every call of gmq's HTTP API a producer or a consumer makes, cron
// schedules' and batches' (schedules.js, batches.js), and how each reads a
// retried call's answer (README's "Retrying safely").

import { addToBatch, cancelBatch, closeBatch, createBatch, getBatch, listBatches } from './batches.js';
import { deleteSchedule, fireSchedule, getSchedule, schedules, setSchedule } from './schedules.js';
import { ok } from './errors.js';
import { events } from './events.js';
import { Transport } from './http.js';
import { Running, cancel, progress, pushAndWait, storedBefore, waitEnd, watch } from './outcomes.js';
import { ackRef, checkBody, checkResult, followUps, jobPath, jobRef, pushJob, reason, topicList } from './wire.js';
import { Worker, defined } from './worker.js';

/** The options' defaults, in seconds but for retries. */
export const defaults = Object.freeze({
  url: 'http://127.0.0.1:8000',
  timeout: 10,
  retries: 3,
  retryMaxDelay: 10,
});

/**
 * Client talks to one gmq. It holds no state beyond its options, so one
 * client may serve any number of concurrent calls and workers.
 *
 * Every duration is in seconds (fractions allowed), as on the wire and in
 * gmq's other clients: a job's delay and TTR, a pop's timeout, the client's
 * timeout.
 */
export class Client {
  #t;
  #running = new Running(); // the jobs a worker of this client runs, for progress's 410

  /**
   * @param {string | {url?: string, token?: string, timeout?: number, retries?: number,
   *   retryMaxDelay?: number}} [options] the broker's URL, or the options
   */
  constructor(options = {}) {
    const given = typeof options === 'string' ? { url: options } : options;
    // An option given as undefined (url: process.env.GMQ_URL, unset) keeps its default.
    const opts = { ...defaults, ...defined(given) };
    for (const k of ['timeout', 'retries', 'retryMaxDelay']) {
      if (!(typeof opts[k] === 'number' && opts[k] >= 0)) throw new TypeError(`${k} must be a number of at least 0, got ${opts[k]}`);
    }
    this.#t = new Transport(opts);
  }

  /** The broker's base URL. */
  get url() {
    return this.#t.base;
  }

  /**
   * push stores a job and returns its id. With a client id (options.id), a
   * retry after a 503 that answers 409 means an earlier try was stored after
   * all: push returns the id as stored. A first try's 409 is thrown (the id
   * is taken). Without a client id a retried push may store the job twice.
   *
   * options.unique ({key, for: seconds, mode: 'reject' | 'replace' |
   * 'debounce'}) keeps one job per key in the topic while the key is held,
   * and makes push return gmq's answer, not the bare id: {id, internal_id},
   * plus unique: 'replaced' or 'debounced' when the waiting job that held
   * the key was changed instead (id is that job's; no new job was made). A
   * held key in mode reject throws a GmqError 409 whose heldBy names the job
   * that holds it. gmq checks a client id before a key, so a retry's 409 is
   * taken as stored only when it is the id's or names the id as the key's
   * holder; without an id a retry's 409 may name the job the first try
   * stored, and a retried replace or debounce changes that job again (see
   * the README's Retries).
   *
   * body is a string, or an object or an array, sent as JSON: a popped job
   * gives it back as it came (an object or array as one, a string as a
   * string, even one whose text is JSON).
   *
   * options.keepCompleted (seconds) is how long the job is kept after its
   * ack, completed, with the ack's result (see ack), over its topic's
   * keep_completed; 0 deletes it at its ack, whatever its topic says.
   *
   * options.timeout (seconds) is how long a worker's handler may run on the
   * job: a Worker aborts a handler past it, or past its own timeout,
   * whichever is shorter, and fails the job. A popped job shows it.
   *
   * Workflows (gmq's docs/workflows.md): options.after (ids) keeps the job
   * 'waiting' until those jobs complete, onDependencyFailure ('cancel', the
   * default, or 'run') says what a failed one does to it, withResults keeps
   * their results (getJob's dependency_results); then and onDead are jobs
   * (as pushBatch takes them, each with its own then, a withResult, but no
   * id or unique) gmq pushes once when the job completes, when it dies.
   * @param {string} topic
   * @param {string | object | unknown[]} body
   * @param {object} [options] id, delay, ttr, priority, retry, expiresIn, expiresAt, traceparent, unique, group,
   *   keepCompleted, timeout, after, onDependencyFailure, withResults, then, onDead, signal
   * @returns {Promise<string | {id: string, internal_id?: number, unique?: string}>}
   */
  async push(topic, body, options = {}) {
    const { signal, ...fields } = options;
    const job = pushJob({ ...fields, topic, body });
    const a = await this.#t.call({ method: 'POST', path: '/api/v1/jobs', payload: job, signal });
    if (storedBefore(a, job)) return job.unique == null ? job.id : { id: job.id };
    if (job.unique == null) return ok(a, 201).id;
    return ok(a, a.status === 200 ? 200 : 201); // 200: the waiting job holding the key was changed
  }

  /**
   * pushAndWait pushes a job as push does (options: wait, in seconds, and
   * push's), then waits for its end in the same request: {id, end}, end
   * null when it has not ended within wait. See outcomes.js.
   * @returns {Promise<{id: string, end: object | null}>}
   */
  pushAndWait(topic, body, options = {}) {
    return pushAndWait(this.#t, topic, body, options);
  }

  /**
   * pushBatch stores several jobs, all or (on bad input) none, and returns
   * their ids in order. A 503 is retried only when no job was stored; one
   * that stored some is thrown with their ids in err.body.stored_ids.
   * @param {object[]} jobs each {topic, body, ...push's options}
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<string[]>}
   */
  async pushBatch(jobs, { signal } = {}) {
    const payload = { jobs: jobs.map(pushJob) };
    const retryAs = (a, req) => (a.body?.stored_ids?.length ? null : req);
    return ok(await this.#t.call({ method: 'POST', path: '/api/v1/jobs/batch', payload, signal, retryAs }), 201).ids;
  }

  /**
   * pop reserves a job from the first listed topic that has one, waiting up
   * to timeout seconds for one. It returns null when the time is up.
   * @param {string | string[]} topics
   * @param {{timeout?: number, signal?: AbortSignal}} [options]
   */
  async pop(topics, { timeout = 0, signal } = {}) {
    const a = await this.#t.call(popRequest(topicList(topics), 0, timeout, signal));
    return a.status === 204 ? null : ok(a, 200);
  }

  /**
   * popMany reserves up to count jobs: it waits up to timeout seconds for
   * the first, then takes as many as are ready. It returns [] when none came.
   * @param {string | string[]} topics
   * @param {number} count
   * @param {{timeout?: number, signal?: AbortSignal}} [options]
   */
  async popMany(topics, count, { timeout = 0, signal } = {}) {
    const a = await this.#t.call(popRequest(topicList(topics), count, timeout, signal));
    return a.status === 204 ? [] : ok(a, 200).jobs;
  }

  /**
   * ack finishes a popped job. A retry after a 503 that answers 404 means
   * an earlier try acked it: ack returns as for a success.
   *
   * options.result (undefined or null: none) is any value JSON.stringify
   * encodes: gmq keeps the job, completed, with it for its topic's
   * keep_results (an hour by default), or as its keep_completed (its
   * topic's or its own) says where one is set, and getJob shows it as the
   * job's result; where neither keeps it (0), it is dropped with the job.
   * One JSON.stringify
   * throws on (a BigInt, a cycle) throws its TypeError before any request;
   * one over the topic's max_result (16 KiB by default) is a GmqError 413,
   * and the job stays reserved.
   *
   * options.push are follow-ups: jobs (objects as push's options take
   * them, with topic and body, but without id or unique; 1 to 100) that
   * gmq pushes once the ack succeeds, each exactly once, the ack and they
   * together or not at all. ack then resolves to their ids, in push's
   * order (undefined without push). It resolves to [] when an earlier ack
   * completed the job (gmq answers "again": that ack's follow-ups stand)
   * or a retry finds the job gone (the earlier try acked it). A bad
   * follow-up is a GmqError 400 (413: too big) naming it ("push: job N" or
   * "follow-up N"); a broker or store too old for follow-ups, Redis at
   * maxmemory or a server status that refuses pushes a 503 (retried as
   * any); either way the job stays reserved. An empty push is a plain ack.
   * @param {string | {id: string, attempt?: number, token?: string}} job a popped job, or an id
   * @param {{result?: unknown, push?: Record<string, unknown>[], signal?: AbortSignal}} [options]
   * @returns {Promise<string[] | undefined>}
   */
  async ack(job, { result, push, signal } = {}) {
    const { id, attempt, token } = jobRef(job);
    const payload = { attempt, token, result: checkResult(result), push: followUps(push) };
    const a = await this.#t.call({ method: 'POST', path: jobPath(id, 'ack'), payload, signal });
    const ids = push === undefined || push === null ? undefined : [];
    if (a.status === 404 && a.tries > 1) return ids;
    const body = ok(a, 200);
    return ids && (body?.pushed ?? []).map(String);
  }

  /**
   * ackAndPop acks a popped job (with options.result, as ack's) and pops
   * the next in the same request, waiting up to timeout seconds: the next
   * job, or null. If the ack fails (a GmqError), nothing was popped. A 503
   * after the ack went through is retried as a pop alone.
   * @param {string | {id: string, attempt?: number, token?: string}} job
   * @param {string | string[]} topics
   * @param {{timeout?: number, result?: unknown, signal?: AbortSignal}} [options]
   */
  async ackAndPop(job, topics, { timeout = 0, result, signal } = {}) {
    const { id, attempt, token } = jobRef(job);
    const list = topicList(topics);
    const pop = popRequest(list, 0, timeout, signal);
    const payload = { attempt, token, result: checkResult(result), next: { topics: list, timeout } };
    const a = await this.#t.call({ method: 'POST', path: jobPath(id, 'ack'), wait: timeout, signal,
      payload, retryAs: (answer, req) => (answer.body?.acked ? pop : req) });
    if (a.status === 404 && a.tries > 1) return this.pop(list, { timeout, signal }); // an earlier try acked it
    return a.status === 204 ? null : ok(a, 200);
  }

  /**
   * ackMany acks popped jobs, each on its own (with its result, when it
   * has one: {...job, result}, as ack's), in one request and, with count >
   * 0, pops up to count more as popMany does. The answer says which were
   * acked and which failed, and why ({id, status, error}); pushed the
   * follow-ups' ids of the jobs acked with them ({...job, push}, as
   * ack's), by acked id; jobs holds the next ones (with a count). On a
   * retried request a 404 counts as acked. A follow-up gmq cannot read
   * fails the whole request (400); one it refuses at the ack (an id, a
   * unique) fails that job's ack alone.
   * @param {Array<string | {id: string, attempt?: number, result?: unknown}>} jobs
   * @param {{topics?: string | string[], count?: number, timeout?: number, signal?: AbortSignal}} [options]
   */
  async ackMany(jobs, { topics, count = 0, timeout = 0, signal } = {}) {
    const payload = { jobs: jobs.map(ackRef) };
    /** @type {{acked: string[], failed?: object[]} | null} */
    let acks = null; // what a 503 said was acked before its pop failed
    let retryAs;
    if (count > 0) {
      const list = topicList(topics);
      const pop = popRequest(list, count, timeout, signal);
      payload.next = { topics: list, count, timeout };
      retryAs = (answer, req) => {
        if (!Array.isArray(answer.body?.acked)) return req;
        acks = answer.body; // the acks stand: retry only the pop
        return pop;
      };
    }
    const a = await this.#t.call({ method: 'POST', path: '/api/v1/ack', payload, wait: count > 0 ? timeout : 0, signal, retryAs });
    const body = a.status === 204 ? {} : ok(a, 200);
    const out = acks ? { acked: acks.acked, failed: acks.failed ?? [] } : { acked: body.acked, failed: body.failed };
    const pushed = acks ? acks.pushed : body.pushed;
    if (pushed) out.pushed = pushed;
    if (a.tries > 1) goneIsAcked(out);
    if (count > 0) out.jobs = body.jobs ?? [];
    return out;
  }

  /**
   * fail reports that a popped job failed, with why: it waits its retry
   * policy's backoff, or goes to its topic's dead set past max_attempts.
   * Returns the job as it now is (state "delayed" or "dead").
   * @param {string | {id: string, attempt?: number, token?: string}} job
   * @param {string | Error} error the reason, or an Error whose message is
   * @param {{signal?: AbortSignal}} [options]
   */
  async fail(job, error = '', { signal } = {}) {
    const { id, attempt, token } = jobRef(job);
    return this.#action(id, 'fail', { attempt, token, error: reason(error) }, signal);
  }

  /**
   * failMany reports several failures in one request, all with one reason:
   * jobs (as they now are) and failed ({id, status, error}).
   * @param {Array<string | {id: string, attempt?: number}>} jobs
   * @param {string | Error} error
   * @param {{signal?: AbortSignal}} [options]
   */
  async failMany(jobs, error = '', { signal } = {}) {
    const why = reason(error);
    const payload = { jobs: jobs.map((j) => ({ ...jobRef(j), error: why })) };
    return ok(await this.#t.call({ method: 'POST', path: '/api/v1/fail', payload, signal }), 200);
  }

  /**
   * touch gives a popped job a fresh TTR. Returns the job.
   * @param {string | {id: string, attempt?: number, token?: string}} job
   * @param {{signal?: AbortSignal}} [options]
   */
  async touch(job, { signal } = {}) {
    const { id, attempt, token } = jobRef(job);
    return this.#action(id, 'touch', { attempt, token }, signal);
  }

  /**
   * release gives a popped job back, ready again after delay seconds, with
   * a new priority if one is given. Returns the job.
   * @param {string | {id: string, attempt?: number, token?: string}} job
   * @param {{delay?: number, priority?: number, signal?: AbortSignal}} [options]
   */
  async release(job, { delay = 0, priority, signal } = {}) {
    const { id, attempt, token } = jobRef(job);
    return this.#action(id, 'release', { attempt, token, delay, priority }, signal);
  }

  /**
   * bury parks a popped job until it is kicked, with a new priority if one
   * is given. Returns the job.
   * @param {string | {id: string, attempt?: number, token?: string}} job
   * @param {{priority?: number, signal?: AbortSignal}} [options]
   */
  async bury(job, { priority, signal } = {}) {
    const { id, attempt, token } = jobRef(job);
    return this.#action(id, 'bury', { attempt, token, priority }, signal);
  }

  /**
   * progress reports how far a popped job has got ({progress, log}) and
   * resolves to the job; a 410 (cancelled) rejects, and aborts the signal
   * of the worker's handler that runs it. See outcomes.js.
   */
  progress(job, options = {}) {
    return progress(this.#t, this.#running, job, options);
  }

  /** cancel ends a job that should not run: see outcomes.js. */
  cancel(id, options = {}) {
    return cancel(this.#t, id, options);
  }

  /** waitEnd waits up to options.timeout seconds for a job's end: see outcomes.js. */
  waitEnd(id, options = {}) {
    return waitEnd(this.#t, id, options);
  }

  /**
   * update changes a waiting (ready or delayed) job in place, the fields
   * given: its delay (seconds from now; 0: ready at once), priority or body
   * (a string, or an object or an array, as push's).
   * Returns the job as it now is; a reserved, buried or dead job is not
   * changed: a GmqError with status 409.
   * @param {string | {id: string}} job
   * @param {{delay?: number, priority?: number, body?: string | object | unknown[], signal?: AbortSignal}} [changes]
   */
  async update(job, options = {}) {
    // Every option but signal goes to gmq, which refuses a name it does not
    // know ({dealy: 5}), as push does, rather than dropping it here.
    const { signal, ...changes } = options;
    if (changes.body !== undefined) checkBody(changes.body);
    return ok(await this.#t.call({ method: 'PATCH', path: jobPath(jobRef(job).id), payload: changes, signal }), 200);
  }

  /**
   * getJob returns a job in any state (its failures and last_error too; a
   * completed job's completed_at and result, and its own keep_completed),
   * or null when gmq does not know it (deleted, or acked and not kept).
   * @param {string} id
   * @param {{signal?: AbortSignal}} [options]
   */
  async getJob(id, { signal } = {}) {
    const a = await this.#t.call({ method: 'GET', path: jobPath(jobRef(id).id), signal });
    return a.status === 404 ? null : ok(a, 200);
  }

  /**
   * releaseUnique frees topic's unique key before its window ends, whatever
   * became of the job that took it: the next push with the key makes a new
   * job. A key not held is a GmqError 404; a retry's 404 means an earlier
   * try released it.
   * @param {string} topic
   * @param {string} key
   * @param {{signal?: AbortSignal}} [options]
   */
  async releaseUnique(topic, key, { signal } = {}) {
    await this.#delete(`/api/v1/topics/${encodeURIComponent(topic)}/unique/${encodeURIComponent(key)}`, signal);
  }

  /** schedules lists every cron schedule, by name, as gmq shows them: see schedules.js. */
  schedules(options = {}) {
    return schedules(this.#t, options);
  }

  /** getSchedule returns a cron schedule as gmq shows it (none: GmqError 404): see schedules.js. */
  getSchedule(name, options = {}) {
    return getSchedule(this.#t, name, options);
  }

  /** setSchedule makes cron schedule name, or changes it, and returns it: see schedules.js. */
  setSchedule(name, options = {}) {
    return setSchedule(this.#t, name, options);
  }

  /** deleteSchedule removes cron schedule name: see schedules.js. */
  deleteSchedule(name, options = {}) {
    return deleteSchedule(this.#t, name, options);
  }

  /** fireSchedule pushes cron schedule name's job now, and resolves to its {id, internal_id}: see schedules.js. */
  fireSchedule(name, options = {}) {
    return fireSchedule(this.#t, name, options);
  }

  /** createBatch pushes jobs as one batch whose ends gmq counts, with its callbacks: see batches.js. */
  createBatch(batch = {}) {
    return createBatch(this.#t, batch);
  }

  /** getBatch resolves to a batch as gmq shows it (none: GmqError 404): see batches.js. */
  getBatch(id, options = {}) {
    return getBatch(this.#t, id, options);
  }

  /** listBatches resolves to a page of the batches kept, newest first ({batches, offset, total}): see batches.js. */
  listBatches(options = {}) {
    return listBatches(this.#t, options);
  }

  /** addToBatch pushes jobs into a batch that is not done, and resolves to their ids: see batches.js. */
  addToBatch(id, jobs, options = {}) {
    return addToBatch(this.#t, id, jobs, options);
  }

  /** closeBatch closes an open batch, and resolves to it: see batches.js. */
  closeBatch(id, options = {}) {
    return closeBatch(this.#t, id, options);
  }

  /** cancelBatch cancels a batch and its jobs, and resolves to how many it asked to cancel: see batches.js. */
  cancelBatch(id, options = {}) {
    return cancelBatch(this.#t, id, options);
  }

  /**
   * events is an async iterator of the events of topics (those with events
   * = true) as they happen, which connects again by itself after a dropped
   * connection, resuming after its last event (options: types,
   * lastEventId, idleTimeout, onReady, onReconnect, signal). See events.js.
   * @param {string | string[]} topics
   * @param {object} [options]
   * @returns {AsyncGenerator<object>}
   */
  events(topics, options = {}) {
    return events(this.#t, topicList(topics), options);
  }

  /**
   * worker starts a Worker: concurrency loops that pop jobs of topics and
   * run handler on each (see Worker).
   * @param {string | string[]} topics
   * @param {(job: object) => unknown} handler
   * @param {object} [options] see Worker
   */
  worker(topics, handler, options = {}) {
    return new Worker(this, topicList(topics), handler, options);
  }

  /**
   * The worker's: while its handler runs job, a progress call answered 410
   * for that delivery calls onCancel with the answer. Returns what forgets it.
   * @param {{id: string, attempt?: number}} job
   * @param {(answer: object) => void} onCancel
   */
  [watch](job, onCancel) {
    return this.#running.watch(jobRef(job), onCancel);
  }

  async #action(id, action, payload, signal) {
    return ok(await this.#t.call({ method: 'POST', path: jobPath(id, action), payload, signal }), 200);
  }

  /** #delete sends a DELETE; a retry's 404 means an earlier try did it. */
  async #delete(path, signal) {
    const a = await this.#t.call({ method: 'DELETE', path, signal });
    if (a.status === 404 && a.tries > 1) return;
    ok(a, 200);
  }
}


function popRequest(topics, count, timeout, signal) {
  const payload = count > 0 ? { topics, count, timeout } : { topics, timeout };
  return { method: 'POST', path: '/api/v1/pop', payload, wait: timeout, signal };
}

/** goneIsAcked moves a retried batch ack's 404s (acked by an earlier try) to acked. */
function goneIsAcked(out) {
  const gone = out.failed.filter((f) => f.status === 404);
  if (gone.length === 0) return;
  out.acked = [...out.acked, ...gone.map((f) => f.id)];
  out.failed = out.failed.filter((f) => f.status !== 404);
}
