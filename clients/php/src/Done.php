<?php

declare(strict_types=1);

namespace Gmq;

/**
 * What a worker's handler returns to end its job with follow-ups: the
 * worker acks the job with $result (null: none) and $push, jobs (arrays as
 * Client::pushBatch takes them, without 'id' or 'unique') that gmq pushes
 * once the ack succeeds, each exactly once (see Client::ack):
 *
 *     return new Gmq\Done(result: ['shipped' => true], push: [['topic' => 'emails', 'body' => $job['body']]]);
 *
 * Follow-ups gmq refuses (400, or 413 once the ack is sent without its
 * result) fail the job with gmq's reason, so that it shows as the job's
 * last_error and is tried again by its retry policy, or dies: acking it
 * without them would lose what comes next.
 */
final class Done
{
    /** @param list<array<string, mixed>> $push */
    public function __construct(
        public readonly mixed $result = null,
        public readonly array $push = [],
    ) {
    }
}
