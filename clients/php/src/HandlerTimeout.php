<?php

declare(strict_types=1);

namespace Gmq;

/**
 * Thrown into a worker's handler when it runs past the worker's timeout, or
 * its job's own (a SIGALRM, so a sleep or a blocking call is cut short
 * too); the job is then failed with its message, whatever the handler does
 * with it.
 */
final class HandlerTimeout extends \RuntimeException
{
    public function __construct(int $seconds)
    {
        parent::__construct("gmq: the handler ran out of time after $seconds s");
    }
}
