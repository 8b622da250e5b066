// Events: a stream of the topics' events (GET /api/v1/events, Server-Sent
// Events) as an async iterator that connects again by itself, resuming
// after the last event it yielded.

import { GmqError, failure } from './errors.js';
import { parseRetryAfter, pause, userAgent } from './http.js';

/**
 * LOST is the type of the event yielded when the broker said events were
 * missed: the position resumed from is older than its buckets keep (about
 * their last 10,000 events each). buckets names them and error says it;
 * the stream goes on from the oldest event they keep.
 */
export const LOST = 'lost';

/** The events' defaults, in seconds. */
export const eventsDefaults = Object.freeze({
  idleTimeout: 45, // three of the broker's keep-alives (every 15 s)
});

/** Lagging ends a connection the broker ended because its consumer fell behind. */
class Lagging extends Error {}

/**
 * events yields the events of topics (those with events = true) as they
 * happen: the broker's JSON ({type, topic, id (the job's), internal_id,
 * attempt, at, and result, error, progress or detail when it carries one,
 * cut: true when that was cut at 1 KiB}) with eventId, the stream's
 * position after it; or a lost event ({type: LOST, buckets, error,
 * eventId}).
 *
 * A connection that drops, stays silent for idleTimeout seconds, ends
 * because the consumer fell behind (the broker's lagging event), or fails
 * for want of a broker (no answer, 5xx, 429: max_waiting reached) is made
 * again by itself, with the last event's eventId as Last-Event-ID, so that
 * no event is missed or repeated: after the client's retry backoff (0.5 s
 * doubling up to retryMaxDelay; at once after falling behind). A refusal no
 * retry mends (400: an unknown type, a bad lastEventId; 401) throws a
 * GmqError. Until the first event comes, a reconnect starts from the
 * broker's now.
 *
 * options: types (all when left out), lastEventId (an event's eventId:
 * start after it), idleTimeout, onReady (called each time a connection is
 * in place), onReconnect (told why and how long it waits; default: none),
 * signal (its abort ends the iterator). Leaving a for await loop ends it
 * too, closing its connection.
 * @param {import('./http.js').Transport} t
 * @param {string[]} topics
 * @param {object} options
 */
export async function* events(t, topics, options = {}) {
  const { types, lastEventId, idleTimeout = eventsDefaults.idleTimeout, onReady, onReconnect, signal } = options;
  if (!(typeof idleTimeout === 'number' && idleTimeout > 0)) {
    throw new TypeError(`idleTimeout must be a number of seconds over 0, got ${idleTimeout}`);
  }
  const query = new URLSearchParams({ topics: topics.join(',') });
  if (types?.length) query.set('types', types.join(','));
  const path = `/api/v1/events?${query}`;
  let last = lastEventId;
  for (let failures = 0; ; failures++) {
    let wait = null;
    let why = new Error('the stream ended');
    try {
      for await (const ev of connect(t, path, last, idleTimeout, signal)) {
        if (ev.id) last = ev.id;
        if (ev.name === 'ready') {
          failures = 0;
          onReady?.();
        } else if (ev.name === 'lagging') {
          throw new Lagging(`its consumer fell behind: ${ev.data}`);
        } else if (ev.name === '' || ev.name === 'message' || ev.name === LOST) {
          yield event(ev);
        }
      }
    } catch (err) {
      if (signal?.aborted) return;
      if (err instanceof GmqError && isFatal(err.status)) throw err;
      why = err;
      if (err instanceof Lagging) wait = 0;
      else if (err instanceof GmqError) wait = t.retryDelay(failures + 1, err.retryAfter ?? null);
    }
    wait ??= t.retryDelay(failures + 1, null);
    onReconnect?.(why, wait);
    try {
      await pause(wait, signal);
    } catch {
      return; // signal aborted
    }
  }
}

/**
 * connect makes one connection and yields its Server-Sent Events ({name,
 * id, data}: the id kept from the last event that had one, as the HTML
 * standard says) until it ends. A silence of idleTimeout seconds aborts it
 * (not while the consumer holds an event).
 */
async function* connect(t, path, last, idleTimeout, signal) {
  const ac = new AbortController();
  const onAbort = () => ac.abort(signal.reason);
  if (signal?.aborted) return;
  signal?.addEventListener('abort', onAbort, { once: true });
  let idle = null;
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(() => ac.abort(new GmqError(0, `GET ${path}: silent for ${idleTimeout} s`)), idleTimeout * 1000);
  };
  try {
    arm();
    const headers = { 'User-Agent': userAgent, Accept: 'text/event-stream', 'Cache-Control': 'no-cache' };
    if (last) headers['Last-Event-ID'] = last;
    if (t.token) headers.Authorization = `Bearer ${t.token}`;
    const res = await fetch(t.base + path, { headers, signal: ac.signal });
    if (res.status !== 200) {
      const text = await res.text();
      const err = failure({ status: res.status, body: parseBody(text) });
      err.retryAfter = parseRetryAfter(res.headers.get('retry-after'));
      throw err;
    }
    const kind = res.headers.get('content-type') ?? '';
    if (!kind.startsWith('text/event-stream')) throw new GmqError(0, `GET ${path}: the answer is ${kind}, not text/event-stream`);
    const decoder = new TextDecoder();
    const parser = new EventParser();
    let buffer = '';
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end; (end = buffer.indexOf('\n')) >= 0; ) {
        const ev = parser.line(buffer.slice(0, end).replace(/\r$/, ''));
        buffer = buffer.slice(end + 1);
        if (!ev) continue;
        clearTimeout(idle); // the consumer may take its time over an event
        yield ev;
      }
      arm();
    }
  } finally {
    clearTimeout(idle);
    signal?.removeEventListener('abort', onAbort);
    ac.abort();
  }
}

/** EventParser gathers the lines of Server-Sent Events. */
class EventParser {
  id = '';
  name = '';
  data = null;

  /** line reads one line; it returns the event a blank line ends, if it has data. */
  line(line) {
    if (line === '') {
      const ev = this.data === null ? null : { name: this.name, id: this.id, data: this.data };
      this.name = '';
      this.data = null;
      return ev;
    }
    if (line.startsWith(':')) return null; // a comment: the keep-alive
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'id' && !value.includes('\0')) this.id = value;
    else if (field === 'event') this.name = value;
    else if (field === 'data') this.data = this.data === null ? value : `${this.data}\n${value}`;
    return null;
  }
}

/** event is what the iterator yields for an event of the stream. */
function event(ev) {
  const out = JSON.parse(ev.data);
  if (ev.name === LOST) out.type = LOST;
  out.eventId = ev.id;
  return out;
}

function parseBody(text) {
  try {
    const body = JSON.parse(text);
    if (body && typeof body === 'object') return body;
  } catch {
    // not gmq's JSON: keep the text as the reason
  }
  return { error: text.trim() };
}

/** isFatal says no retry mends a refusal: a 4xx but a timeout or "too many". */
function isFatal(status) {
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}
