/**
 * GmqError is an answer from gmq that is not a success (status is its HTTP
 * status and message gmq's own reason), or no answer at all (status 0: the
 * broker could not be reached, or did not answer within the client's
 * timeout; cause says why).
 *
 * Statuses gmq uses: 400 bad input, 401 no or wrong token, 404 unknown job or
 * topic, 409 a duplicate id, a unique key held (see heldBy), a stale
 * delivery or the wrong state, 410 the job was cancelled while reserved
 * (it has ended: stop its work), 413 too big, 429 too many wrong tokens or
 * waiting consumers, 503 Redis unreachable or too slow (retried by the
 * client first, see Client's retries).
 */
export class GmqError extends Error {
  /**
   * @param {number} status the HTTP status, 0 when there was no answer
   * @param {string} message gmq's reason, or what went wrong on the way
   * @param {{body?: any, cause?: unknown}} [extra] the answer's other fields
   *   (a batch push's stored_ids, an ack's acked), and the underlying error
   */
  constructor(status, message, extra = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'GmqError';
    this.status = status;
    if (extra.body !== undefined) this.body = extra.body;
  }

  /**
   * For a 409 to a unique push (mode reject): the id of the job that holds
   * its key, which may be done already (the key is held for its window
   * whatever becomes of the job); undefined for any other error.
   * @returns {string | undefined}
   */
  get heldBy() {
    const id = this.body?.id;
    return this.status === 409 && typeof id === 'string' ? id : undefined;
  }
}

/**
 * ok returns an answer's body when its status is want, and throws it as a
 * GmqError otherwise.
 */
export function ok(answer, want) {
  if (answer.status === want) return answer.body;
  throw failure(answer);
}

/** failure is the GmqError of an answer that is not a success. */
export function failure(answer) {
  const body = answer.body ?? {};
  return new GmqError(answer.status, String(body.error ?? `unexpected HTTP ${answer.status}`), { body });
}
