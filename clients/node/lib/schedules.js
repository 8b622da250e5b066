// Cron schedules (gmq's docs/topics.md, Cron schedules): Client's calls,
// given its transport.

import { ok } from './errors.js';
import { pushJob } from './wire.js';

/**
 * schedules lists every cron schedule, by name, as gmq shows them.
 * @param {import('./http.js').Transport} t
 * @param {{signal?: AbortSignal}} [options]
 */
export async function schedules(t, { signal } = {}) {
  return ok(await t.call({ method: 'GET', path: '/api/v1/schedules', signal }), 200).schedules;
}

/**
 * getSchedule returns a cron schedule as gmq shows it (its next and last
 * fire, its counts, its layers); none is a GmqError 404, as in the Go,
 * Python and PHP clients.
 * @param {import('./http.js').Transport} t
 * @param {string} name
 * @param {{signal?: AbortSignal}} [options]
 */
export async function getSchedule(t, name, { signal } = {}) {
  return ok(await t.call({ method: 'GET', path: schedulePath(name), signal }), 200);
}

/**
 * setSchedule makes cron schedule name, or changes it, and returns it as
 * it now is. Each field given (cron, tz, job, overlap, paused) lies over
 * its run-time layer, those left out stay, and null takes one back to
 * conf.ini's [schedule.NAME] (or its default). A new schedule needs cron
 * and job; job is what each fire pushes, written as push's options are
 * ({topic, body, ttr, retry: {maxAttempts}...}) but with no id. Its next
 * fire is counted from now. A bad definition is a GmqError 400 that says
 * what is wrong (a field gmq does not know is named, not dropped).
 * @param {import('./http.js').Transport} t
 * @param {string} name
 * @param {{cron?: string | null, tz?: string | null, job?: object | null,
 *   overlap?: 'allow' | 'skip' | null, paused?: boolean | null, signal?: AbortSignal}} options
 */
export async function setSchedule(t, name, options = {}) {
  const { signal, ...changes } = options;
  if (changes.job != null) changes.job = pushJob(changes.job);
  return ok(await t.call({ method: 'PUT', path: schedulePath(name), payload: changes, signal }), 200);
}

/**
 * deleteSchedule removes cron schedule name (one of conf.ini's comes back
 * at the broker's next reload). None is a GmqError 404; a retry's 404
 * means an earlier try deleted it.
 * @param {import('./http.js').Transport} t
 * @param {string} name
 * @param {{signal?: AbortSignal}} [options]
 */
export async function deleteSchedule(t, name, { signal } = {}) {
  const a = await t.call({ method: 'DELETE', path: schedulePath(name), signal });
  if (a.status === 404 && a.tries > 1) return;
  ok(a, 200);
}

/**
 * fireSchedule pushes cron schedule name's job now, outside its cron, and
 * resolves to {id, internal_id} of the job: counted as its last fire, its
 * next fire unchanged (a paused schedule fires too). None is a GmqError
 * 404; a 409 when its overlap is 'skip' and its last job still waits or
 * is reserved (counted as a skip), or when its job's unique key is held.
 * A fire is not safe to repeat: a retry after a 503 may fire it twice
 * (under overlap 'skip' the retry gets the 409 instead).
 * @param {import('./http.js').Transport} t
 * @param {string} name
 * @param {{signal?: AbortSignal}} [options]
 */
export async function fireSchedule(t, name, { signal } = {}) {
  return ok(await t.call({ method: 'POST', path: `${schedulePath(name)}/fire`, signal }), 201);
}

function schedulePath(name) {
  return `/api/v1/schedules/${encodeURIComponent(name)}`;
}
