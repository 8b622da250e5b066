<?php

declare(strict_types=1);

namespace Gmq;

/**
 * The job was cancelled while it was reserved (gmq's 410): it has ended,
 * and its consumer should stop its work and neither ack nor fail it. Every
 * call answered 410 throws it (progress, touch, ack, fail, release, bury),
 * and the worker throws it into a handler whose job's touch learnt it (a
 * SIGUSR1 from its heartbeat process), as a HandlerTimeout is thrown.
 */
final class JobCancelled extends GmqException
{
    public function __construct(string $message = 'the job was cancelled', ?array $answer = null)
    {
        parent::__construct(410, $message, $answer);
    }
}
