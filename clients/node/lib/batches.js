// Batches (gmq's docs/workflows.md, Batches): jobs pushed together whose
// ends gmq counts. When every one has ended it pushes the batch's
// onComplete job, once, and onSuccess too if none died; onDeath once, at
// the first death. Client's calls, given its transport, and how each reads
// a retried call's answer.

import { failure, ok } from './errors.js';
import { checkResult, jobPath, pushJob, rename } from './wire.js';

/** The broker's names for the batch fields JS writes in camelCase. */
const batchNames = { onComplete: 'on_complete', onSuccess: 'on_success', onDeath: 'on_death', withResults: 'with_results' };

/**
 * createBatch pushes options.jobs (each {topic, body, ...push's options};
 * none: an empty batch, done at once unless open) as one batch and
 * resolves to {id, ids}: the batch's id and its jobs', in order.
 *
 * options.onComplete, onSuccess and onDeath are its callbacks, jobs as
 * push takes them but with no id, unique or after; one withResult gets the
 * batch's summary as its result (its body {body, result: {batch, state,
 * total, completed, dead, removed, meta, results}}). options.meta is any
 * JSON value (16 KiB at most) kept with the batch and in each summary;
 * withResults keeps the completed jobs' results for it (results, by id);
 * open keeps the batch open for addToBatch until closeBatch.
 *
 * A bad batch is a GmqError 400, refused whole. A job its topic refuses as
 * the batch is made (full, its unique key held: 409) cancels the batch and
 * the jobs already pushed: the error's body.batch names it, and none of its
 * callbacks is ever pushed.
 *
 * Retries: a 503 that names no batch (body.batch) made none that can
 * finish (one whose create was cut off is cancelled a minute on, its
 * callbacks never pushed), so it is retried. One that names a batch is
 * thrown, body.batch naming it (getBatch says whether it stands), unless
 * every job has a client id: then a retry cannot push them twice, and a
 * retry's 409 whose first job is in a batch not cancelled (an earlier
 * try's, its answer lost) resolves to that batch, {id, ids}.
 * @param {import('./http.js').Transport} t
 * @param {{jobs?: object[], onComplete?: object, onSuccess?: object, onDeath?: object, meta?: unknown,
 *   open?: boolean, withResults?: boolean, signal?: AbortSignal}} options
 * @returns {Promise<{id: string, ids: string[]}>}
 */
export async function createBatch(t, options) {
  const { signal, jobs = [], meta, ...fields } = options;
  const payload = { ...rename(fields, batchNames), jobs: jobList(jobs, 'a batch'), meta: checkResult(meta) };
  for (const name of ['on_complete', 'on_success', 'on_death']) {
    payload[name] = payload[name] == null ? undefined : pushJob(payload[name]); // null: none
  }
  const named = everyNamed(payload.jobs);
  const retryAs = (answer, req) => (named || answer.body?.batch === undefined ? req : null);
  const a = await t.call({ method: 'POST', path: '/api/v1/batches', payload, signal, retryAs });
  if (a.status === 409 && a.tries > 1 && named) {
    const batch = await pushedBefore(t, payload.jobs, undefined, signal);
    if (batch) return { id: batch, ids: payload.jobs.map((j) => j.id) };
    throw failure(a);
  }
  const { id, ids } = ok(a, 201);
  return { id, ids };
}

/**
 * getBatch resolves to batch id as gmq shows it: its state ('open',
 * 'closed', 'done', 'cancelled'), its counts (total, pending, completed,
 * dead, removed), dead_jobs (up to 100 dead jobs' last errors, by id),
 * meta, callbacks (their ids, by kind), created_at and finished_at. None
 * (or one removed past its retention) is a GmqError 404, as in gmq's other
 * clients.
 * @param {import('./http.js').Transport} t
 * @param {string | {id: string}} id
 * @param {{signal?: AbortSignal}} options
 */
export async function getBatch(t, id, { signal }) {
  return ok(await t.call({ method: 'GET', path: batchPath(id), signal }), 200);
}

/**
 * listBatches resolves to a page of the batches gmq keeps (within their
 * batch_retention), newest first: {batches, offset, total}, batches their
 * views as getBatch shows them, limit of them (1 to 1,000; more is cut to
 * 1,000) from offset, total how many are kept in all. It reaches the
 * newest 5,000 (offset plus limit; past that, or a bad offset or limit, a
 * GmqError 400): read older ones by id (getBatch). A 503 is retried, as
 * getBatch's.
 * @param {import('./http.js').Transport} t
 * @param {{offset?: number, limit?: number, signal?: AbortSignal}} options
 * @returns {Promise<{batches: object[], offset: number, total: number}>}
 */
export async function listBatches(t, { offset = 0, limit = 50, signal } = {}) {
  const query = new URLSearchParams({ offset: String(offset), limit: String(limit) });
  return ok(await t.call({ method: 'GET', path: `/api/v1/batches?${query}`, signal }), 200);
}

/**
 * addToBatch pushes jobs (1 to 1,000, each as createBatch's) into batch
 * id, open, or closed and not done (so a running job may add to its own
 * batch: its view's batch), and resolves to their ids, in order. A done or
 * cancelled batch is a GmqError 409 (jobs added while it is cancelled are
 * cancelled too), an unknown one 404; a job refused cancels those of the
 * call pushed before it, and the batch stands.
 *
 * Retries: a 503 is retried only when every job has a client id, so that
 * a retry cannot add them twice: a retry's 409 whose first job is in this
 * batch, not cancelled, resolves to the ids, added by an earlier try. One
 * without is thrown, since gmq may have added the jobs before it failed
 * (getBatch's total says; or give them ids and add them again).
 * @param {import('./http.js').Transport} t
 * @param {string | {id: string}} id
 * @param {object[]} jobs
 * @param {{signal?: AbortSignal}} options
 * @returns {Promise<string[]>}
 */
export async function addToBatch(t, id, jobs, { signal }) {
  const path = batchPath(id, 'jobs');
  const payload = { jobs: jobList(jobs, 'addToBatch') };
  const named = everyNamed(payload.jobs);
  const a = await t.call({ method: 'POST', path, payload, signal, retryAs: (answer, req) => (named ? req : null) });
  if (a.status === 409 && a.tries > 1 && named) {
    const batch = await pushedBefore(t, payload.jobs, batchId(id), signal);
    if (batch) return payload.jobs.map((j) => j.id);
    throw failure(a);
  }
  return ok(a, 201).ids;
}

/**
 * closeBatch closes an open batch, which is then done once its jobs have
 * ended, and resolves to it as getBatch shows it. A closed or done one is
 * left as it is (so a retry is harmless); a cancelled one is a GmqError 409.
 * @param {import('./http.js').Transport} t
 * @param {string | {id: string}} id
 * @param {{signal?: AbortSignal}} options
 */
export async function closeBatch(t, id, { signal }) {
  return ok(await t.call({ method: 'POST', path: batchPath(id, 'close'), signal }), 200);
}

/**
 * cancelBatch cancels batch id: no callback of it is pushed, and its jobs
 * that have not ended are cancelled (a reserved one when its consumer next
 * reports, as cancel's). It resolves to how many it asked to cancel: 0 for
 * a batch cancelled already, so a retry after a 503 counts only those the
 * last try reached (gmq cancels a huge batch's jobs within its request
 * timeout, and a 503 part-way is retried until all are). A done batch is a
 * GmqError 409, an unknown one 404.
 * @param {import('./http.js').Transport} t
 * @param {string | {id: string}} id
 * @param {{signal?: AbortSignal}} options
 * @returns {Promise<number>}
 */
export async function cancelBatch(t, id, { signal }) {
  return ok(await t.call({ method: 'DELETE', path: batchPath(id), signal }), 200).cancelled;
}

/**
 * pushedBefore reads, after a retry's 409, whether jobs (each with a client
 * id) are those an earlier try pushed: the batch their first job is in,
 * when that job is not cancelled, and the batch is want (an add's) or, for
 * a create (want undefined), one not cancelled; else null.
 */
async function pushedBefore(t, jobs, want, signal) {
  const j = await t.call({ method: 'GET', path: jobPath(jobs[0].id), signal });
  const batch = j.status === 200 && j.body?.state !== 'cancelled' ? j.body?.batch : undefined;
  if (!batch || (want !== undefined && batch !== want)) return null;
  if (want !== undefined) return batch;
  const b = await t.call({ method: 'GET', path: batchPath(batch), signal });
  return b.status === 200 && b.body?.state !== 'cancelled' ? batch : null;
}

/** everyNamed says a batch's jobs (as pushJob made them) are some, each with a client id. */
function everyNamed(jobs) {
  return jobs.length > 0 && jobs.every((j) => typeof j.id === 'string' && j.id !== '');
}

function jobList(jobs, what) {
  if (!Array.isArray(jobs)) throw new TypeError(`${what}'s jobs are an array of jobs, each as push takes it ({topic, body, ...})`);
  return jobs.map(pushJob);
}

/** batchId names a batch: its id (a string, or a number), or {id} (createBatch's answer, a batch's view). */
function batchId(batch) {
  const id = batch !== null && typeof batch === 'object' ? batch.id : batch;
  if ((typeof id === 'string' && id !== '') || Number.isInteger(id)) return String(id);
  throw new TypeError('a batch is named by its id, or by createBatch\'s answer ({id})');
}

function batchPath(batch, action) {
  return `/api/v1/batches/${encodeURIComponent(batchId(batch))}${action ? `/${action}` : ''}`;
}
