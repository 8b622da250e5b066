// The JSON shapes gmq's HTTP API takes, built from the client's arguments.
// Names JS writes in camelCase go on the wire as the broker spells them.

/** The broker's names for the push fields JS writes in camelCase. */
const jobNames = {
  ttr: 'TTR', expiresIn: 'expires_in', expiresAt: 'expires_at', keepCompleted: 'keep_completed',
  onDependencyFailure: 'on_dependency_failure', withResults: 'with_results', withResult: 'with_result', onDead: 'on_dead',
};
const retryNames = { maxAttempts: 'max_attempts' };

/**
 * pushJob is a job to push as the broker reads it. A field it does not know
 * is sent as it is, so the broker refuses it by name (400) rather than the
 * job being stored without it.
 *
 * A job's own follow-ups (then, onDead) are jobs as pushJob makes them, so
 * a chain's every link is renamed; after names the jobs it waits for by id
 * (a string or a number, or a pushed or popped job's {id}). An empty
 * then, onDead or after is none, as an ack's empty push is.
 * @param {Record<string, unknown>} job
 */
export function pushJob(job) {
  if (job === null || typeof job !== 'object') throw new TypeError('a job to push is an object with topic and body');
  checkBody(job.body);
  const out = rename(job, jobNames);
  if (job.retry && typeof job.retry === 'object') out.retry = rename(job.retry, retryNames);
  for (const name of ['then', 'on_dead']) {
    if (Array.isArray(out[name])) out[name] = out[name].length === 0 ? undefined : out[name].map(pushJob);
  }
  if (Array.isArray(out.after)) out.after = out.after.length === 0 ? undefined : out.after.map(afterId);
  return out;
}

/** afterId is a job named in after: its id, or a job's ({id}, as push with unique answers). */
function afterId(dep) {
  return dep !== null && typeof dep === 'object' && typeof dep.id === 'string' ? dep.id : dep;
}

/**
 * checkBody refuses, before any request, a body gmq would refuse: a body is
 * a string, or an object or an array, sent as JSON (gmq keeps its compact
 * text and gives it back as that JSON; a string stays a string).
 * @param {unknown} body
 */
export function checkBody(body) {
  if (typeof body === 'string' || (typeof body === 'object' && body !== null)) return;
  const got = body === null ? 'null' : typeof body;
  throw new TypeError(`a job's body is a string, an object or an array, got ${got}`);
}

/**
 * jobRef names a job for an action on it: a popped job ({id, attempt}),
 * whose attempt fences the action to that delivery (a job delivered again
 * since answers 409), or a bare id, which acts on the job as it is.
 * @param {string | {id: string, attempt?: number}} job
 * @returns {{id: string, attempt: number}}
 */
export function jobRef(job) {
  if (typeof job === 'string' && job !== '') return { id: job, attempt: 0 };
  if (job && typeof job === 'object' && typeof job.id === 'string' && job.id !== '') {
    // A popped job's token names its delivery: the call then reaches that
    // delivery of that job, never a new job pushed again with the same id.
    // (None from a broker too old to hand one out: none is sent.)
    const ref = { id: job.id, attempt: job.attempt ?? 0 };
    if (typeof job.token === 'string' && job.token !== '') ref.token = job.token;
    return ref;
  }
  throw new TypeError('a job is named by a popped job ({id, attempt}) or its id (a string)');
}

/**
 * checkResult refuses, before any request, an ack's result that is not
 * JSON: JSON.stringify's own TypeError (a BigInt, a cycle), or a TypeError
 * for a string (or a name) holding a lone surrogate (half of an emoji cut
 * by slice), which JSON.stringify writes as "\ud83d" and gmq refuses (400)
 * since not every client can read it back. undefined (and null) is no
 * result; so is a value JSON has no text for (a function, a symbol), which
 * JSON.stringify leaves out.
 * @param {unknown} result
 * @returns {unknown} the result to send, undefined for none
 */
export function checkResult(result) {
  if (result === undefined || result === null) return undefined;
  return JSON.stringify(result, wellFormed) === undefined ? undefined : result;
}

const loneSurrogate = /[\uD800-\uDFFF]/u; // with u, a pair is one code point: only a lone half matches

/** wellFormed is a JSON.stringify replacer that throws on a lone surrogate in a string or a name. */
function wellFormed(key, value) {
  for (const s of [key, value]) {
    const m = typeof s === 'string' ? loneSurrogate.exec(s) : null;
    if (m) {
      const hex = m[0].charCodeAt(0).toString(16);
      throw new TypeError(`a string holds a lone surrogate \\u${hex} (gmq refuses it: not every client reads it back)`);
    }
  }
  return value;
}

/**
 * ackRef names a job for a batch ack, as jobRef does, with its result (a
 * popped job given with one: {...job, result}).
 * @param {string | {id: string, attempt?: number, token?: string, result?: unknown}} job
 */
export function ackRef(job) {
  const ref = jobRef(job);
  const result = typeof job === 'object' ? checkResult(job.result) : undefined;
  const push = typeof job === 'object' ? followUps(job.push) : undefined;
  return { ...ref, ...(result === undefined ? {} : { result }), ...(push === undefined ? {} : { push }) };
}

/**
 * followUps is an ack's follow-ups as the broker reads them: each job as
 * pushJob makes it (camelCase names to the broker's), undefined for none
 * (undefined, null or []).
 * @param {unknown} push
 * @returns {Record<string, unknown>[] | undefined}
 */
export function followUps(push) {
  if (push === undefined || push === null) return undefined;
  if (!Array.isArray(push)) throw new TypeError('an ack\'s push is an array of jobs, each as push takes it ({topic, body, ...})');
  return push.length === 0 ? undefined : push.map(pushJob);
}

/** jobPath is the URL of an action on one job. */
export function jobPath(id, action) {
  return `/api/v1/jobs/${encodeURIComponent(id)}${action ? `/${action}` : ''}`;
}

/**
 * topicList accepts one topic or several.
 * @param {string | string[]} topics
 */
export function topicList(topics) {
  const list = typeof topics === 'string' ? [topics] : topics;
  if (!Array.isArray(list) || list.length === 0) throw new TypeError('give a topic, or a non-empty array of topics');
  return [...list];
}

/** reason is what a failure is reported with: an Error's message, or the thrown value as text. */
export function reason(err) {
  if (err instanceof Error) return err.message || err.name;
  return typeof err === 'string' ? err : String(err);
}

/** rename is obj with its camelCase names as names spells them on the wire, undefined values left out. */
export function rename(obj, names) {
  const out = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v !== undefined) out[names[k] ?? k] = v;
  }
  return out;
}
