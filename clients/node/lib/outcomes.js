// How a job goes and ends: a consumer's progress, an operator's cancel, a
// producer's wait for the end (Client's calls, given its transport), and
// the jobs a worker's handlers run, so that a progress call answered 410
// (the job was cancelled) stops the handler that runs it.

import { failure, ok } from './errors.js';
import { checkResult, jobPath, jobRef, pushJob } from './wire.js';

/** watch names Client's method that registers a running job (the worker's; not for users). */
export const watch = Symbol('gmq-client: watch a running job');

/**
 * progress reports how far a popped job has got: options.progress (any
 * value JSON.stringify encodes; undefined or null: the last one given
 * stays) and options.log, a line for the job's log. gmq keeps the last
 * progress and the topic's max_log lines of the log (each cut to 1 KiB)
 * with the job, which getJob shows (progress; log: [{at, line}]), and
 * starts the job's TTR again as a touch does. Resolves to the job as it
 * now is. Fenced by the job's attempt and token, as ack is (another
 * delivery's progress is a GmqError 409).
 *
 * A job cancelled while it is reserved rejects with a GmqError 410: it has
 * ended, and its consumer should stop its work and neither ack nor fail
 * it. When a worker of the client runs the job's handler, that 410 also
 * aborts the handler's signal with a CancelledError (running). A progress
 * over the topic's max_result is a GmqError 413; one JSON.stringify throws
 * on is thrown before any request. A retry after a 503 may log the line
 * twice.
 * @param {import('./http.js').Transport} t
 * @param {Running} running
 * @param {string | {id: string, attempt?: number, token?: string}} job a popped job
 * @param {{progress?: unknown, log?: string, signal?: AbortSignal}} options
 */
export async function progress(t, running, job, { progress, log, signal }) {
  const { id, attempt, token } = jobRef(job);
  const payload = { attempt, token, progress: checkResult(progress), log };
  const a = await t.call({ method: 'POST', path: jobPath(id, 'progress'), payload, signal });
  if (a.status === 410) running.cancelled(id, attempt, failure(a));
  return ok(a, 200);
}

/**
 * cancel ends a job that should not run, and resolves to it as it now is.
 * A waiting job (delayed, ready, buried) ends at once, state 'cancelled':
 * kept as a completed job would be (its keep_completed, or its topic's),
 * or, where nothing keeps it, removed ({id, state: 'cancelled'} alone). A
 * reserved job is marked (cancelling: true) and ends cancelled at its
 * consumer's next touch, progress, ack, release, bury or fail, each
 * answered 410 (a worker then aborts the job's handler's signal), or when
 * its TTR runs out. An ended job (completed, dead, cancelled) is a
 * GmqError 409, an unknown one 404.
 * @param {import('./http.js').Transport} t
 * @param {string} id
 * @param {{signal?: AbortSignal}} options
 */
export async function cancel(t, id, { signal }) {
  const a = await t.call({ method: 'POST', path: jobPath(jobRef(id).id, 'cancel'), signal });
  return ok(a, a.status === 202 ? 202 : 200);
}

/**
 * waitEnd waits up to options.timeout seconds (gmq caps it at its
 * max_pop_timeout, 60 by default) for a job's end, and resolves to how it
 * ended, or null when it has not within timeout (0: a look). A job kept
 * after its end comes back whole: state 'completed' with its result,
 * 'dead' with its last_error, or 'cancelled'. One that is not kept is {id,
 * state}: 'acked', 'deleted', 'expired', 'taken', 'discarded', or 'gone'
 * (it ended while no broker could hear how). A job gmq does not know
 * (never pushed, or ended before the wait and not kept) is a GmqError 404.
 * @param {import('./http.js').Transport} t
 * @param {string} id
 * @param {{timeout?: number, signal?: AbortSignal}} options
 */
export async function waitEnd(t, id, { timeout = 0, signal }) {
  const path = `${jobPath(jobRef(id).id, 'wait')}?timeout=${seconds(timeout)}`;
  const a = await t.call({ method: 'GET', path, wait: timeout, signal });
  return a.status === 204 ? null : ok(a, 200);
}

/**
 * pushAndWait pushes a job as push does, then waits up to options.wait
 * seconds for its end in the same request: request and response over the
 * queue. It resolves to {id, end}: end is how the job ended, as waitEnd
 * says, or null when it has not ended within wait (wait again with
 * waitEnd). A job not kept that ended before the wait began ends {id,
 * state: 'gone'}.
 *
 * Its retries are push's: a retry whose 409 says an earlier try stored the
 * job (with a client id) waits for it with waitEnd. When the push went
 * through and only the wait failed (429: too many waiting; a 503), the
 * GmqError is thrown at once, its body's id naming the job stored.
 * @param {import('./http.js').Transport} t
 * @param {string} topic
 * @param {string | object | unknown[]} body
 * @param {object} options wait (seconds), and push's options
 * @returns {Promise<{id: string, end: object | null}>}
 */
export async function pushAndWait(t, topic, body, options) {
  const { signal, wait = 0, ...fields } = options;
  const job = pushJob({ ...fields, topic, body });
  const path = `/api/v1/jobs?wait=${seconds(wait)}`;
  const retryAs = (answer, req) => (answer.body?.internal_id ? null : req); // stored: only the wait failed
  const a = await t.call({ method: 'POST', path, payload: job, wait, signal, retryAs });
  if (storedBefore(a, job)) return { id: job.id, end: await waitEnd(t, job.id, { timeout: wait, signal }) };
  const answer = ok(a, a.status === 202 ? 202 : 200);
  return { id: answer.id, end: a.status === 202 ? null : answer };
}

/**
 * storedBefore says a push's answer is a retry's 409 that means an earlier
 * try stored the job: the 409 for its client id (it names no holder), or
 * for a key this id holds.
 */
export function storedBefore(answer, job) {
  // A 409 for a dependency that failed ("after: job N is dead", gmq's
  // pool/deps.go) says nothing of the job's own id.
  const dependency = String(answer.body?.error ?? '').includes('after: job ');
  return answer.status === 409 && answer.tries > 1 && job.id !== undefined && !dependency && [undefined, job.id].includes(answer.body?.id);
}

/** seconds is a number of seconds for a query string. */
function seconds(value) {
  if (!(typeof value === 'number' && value >= 0)) throw new TypeError(`a wait is a number of seconds, got ${value}`);
  return String(value);
}

/** Running holds the jobs a worker's handlers run, by id. */
export class Running {
  /** @type {Map<string, {attempt: number, onCancel: (err: import('./errors.js').GmqError) => void}>} */
  #jobs = new Map();

  /** watch registers a delivery ({id, attempt}) until the returned function forgets it. */
  watch({ id, attempt }, onCancel) {
    const entry = { attempt, onCancel };
    this.#jobs.set(id, entry);
    return () => {
      if (this.#jobs.get(id) === entry) this.#jobs.delete(id);
    };
  }

  /** cancelled tells the handler running id's delivery attempt (0: whichever) that a call got err, a 410. */
  cancelled(id, attempt, err) {
    const entry = this.#jobs.get(id);
    if (entry && (attempt === 0 || attempt === entry.attempt)) entry.onCancel(err);
  }
}
