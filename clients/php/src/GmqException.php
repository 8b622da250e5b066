<?php

declare(strict_types=1);

namespace Gmq;

/**
 * An answer from gmq that is not a success, or no answer at all.
 *
 * $status is the HTTP status: 400 bad input, 401 no or wrong token, 404 an
 * unknown job, topic, schedule or unique key, 409 a duplicate id, a unique
 * key held (see $heldBy), a stale delivery, the wrong state or a schedule's
 * overlap skip, 410 the job was cancelled while reserved (a JobCancelled),
 * 413 too big, 503 Redis
 * unreachable (after the client's retries); 0 when no answer came (refused,
 * timed out, not JSON). $answer is gmq's whole JSON answer when there was
 * one, for what a half-done request did: a batch push's "stored_ids", an
 * ack-then-pop's "acked".
 */
class GmqException extends \RuntimeException
{
    /**
     * For a 409 to a unique push (mode reject): the id of the job that holds
     * its key, which may be done already (the key is held for its window
     * whatever becomes of the job); null for any other error.
     */
    public readonly ?string $heldBy;

    public function __construct(
        public readonly int $status,
        string $message,
        public readonly ?array $answer = null,
        ?\Throwable $previous = null,
    ) {
        parent::__construct("gmq: $status: $message", $status, $previous);
        $held = $answer['id'] ?? null;
        $this->heldBy = $status === 409 && is_string($held) ? $held : null;
    }
}
