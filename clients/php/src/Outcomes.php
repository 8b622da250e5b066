<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal Client's calls on how a job goes and ends: a consumer's
 * progress, an operator's cancel, a producer's wait for the end.
 */
trait Outcomes
{
    /**
     * Reports how far a popped job has got: $progress (any value
     * json_encode encodes; null: the last one given stays) and $log, a line
     * for the job's log (null: none). gmq keeps the last progress and the
     * topic's max_log lines of the log (each cut to 1 KiB) with the job,
     * which job() shows ('progress'; 'log' => [['at', 'line'], ...]), and
     * starts the job's TTR again as a touch does. Returns the job as it now
     * is. Fenced by $attempt and $token, as ack is (another delivery's
     * progress is a GmqException 409).
     *
     * A job cancelled while it is reserved throws a JobCancelled (status
     * 410): it has ended, and its consumer should stop its work and neither
     * ack nor fail it; thrown out of a worker's handler, the worker does
     * neither. A progress over the topic's max_result is a 413; one
     * json_encode refuses throws its \JsonException before any request. A
     * retry after a 503 may log the line twice.
     */
    public function progress(string $id, int $attempt = 0, mixed $progress = null, ?string $log = null, ?string $token = null): array
    {
        $args = self::delivery($attempt, $token);
        if ($progress !== null) {
            json_encode($progress, JSON_THROW_ON_ERROR);
            $args['progress'] = $progress;
        }
        if ($log !== null) {
            $args['log'] = $log;
        }
        return $this->call('POST', $this->jobPath($id, 'progress'), $args);
    }

    /**
     * Ends a job that should not run, and returns it as it now is. A
     * waiting job (delayed, ready, buried) ends at once, state 'cancelled':
     * kept as a completed job would be (its keep_completed, or its topic's),
     * or, where nothing keeps it, removed (['id' => ..., 'state' =>
     * 'cancelled'] alone). A reserved job is marked ('cancelling' => true)
     * and ends cancelled at its consumer's next touch, progress, ack,
     * release, bury or fail, each answered 410 (a worker then stops the
     * job's handler: see Worker), or when its TTR runs out. An ended job
     * (completed, dead, cancelled) is a GmqException 409, an unknown one 404.
     */
    public function cancel(string $id): array
    {
        return $this->call('POST', $this->jobPath($id, 'cancel'), null);
    }

    /**
     * Waits up to $timeout seconds (gmq caps it at its max_pop_timeout, 60
     * by default) for a job's end, and returns how it ended, or null when it
     * has not within $timeout (0: a look). A job kept after its end comes
     * back whole: state 'completed' with its result, 'dead' with its
     * last_error, or 'cancelled'. One that is not kept is ['id', 'state'],
     * the state 'acked', 'deleted', 'expired', 'taken', 'discarded', or
     * 'gone' (it ended while no broker could hear how). A job gmq does not
     * know (never pushed, or ended before the wait and not kept) is a
     * GmqException 404.
     */
    public function waitEnd(string $id, float $timeout = 0): ?array
    {
        $path = '/api/v1/jobs/' . rawurlencode($id) . '/wait?timeout=' . self::seconds($timeout);
        return $this->call('GET', $path, null, $timeout);
    }

    /**
     * Pushes a job as push() does (its arguments but $wait), then waits up
     * to $wait seconds for its end in the same request: request and
     * response over the queue. Returns ['id' => the job's id, 'end' => how
     * it ended, as waitEnd() says], the end null when the job has not ended
     * within $wait (wait again with waitEnd()). A job not kept that ended
     * before the wait began ends ['id', 'state' => 'gone'].
     *
     * Its retries are push's: a retry whose 409 says an earlier try stored
     * the job (with a client $id) waits for it with waitEnd(). When the push
     * went through and only the wait failed (429: too many waiting; a 503),
     * the GmqException is thrown at once, its $answer's 'id' naming the job.
     *
     * @return array{id: string, end: ?array}
     */
    public function pushAndWait(string $topic, string|array|object $body, float $wait, float $delay = 0, ?float $ttr = null, ?int $priority = null, ?string $id = null, ?array $retry = null, ?array $unique = null, ?string $group = null, ?float $keepCompleted = null, ?float $timeout = null, ?array $after = null, ?string $onDependencyFailure = null, bool $withResults = false, ?array $then = null, ?array $onDead = null): array
    {
        $job = self::pushFields($topic, $body, $delay, $ttr, $priority, $id, $retry, $unique, $group, $keepCompleted, $timeout)
            + self::workflowFields($after, $onDependencyFailure, $withResults, $then, $onDead);
        $path = '/api/v1/jobs?wait=' . self::seconds($wait);
        $response = $this->http->retrying(fn () => $this->http->send('POST', $path, $job, $wait),
            fn (Response $r) => isset($r->answer['internal_id'])); // stored: only the wait failed
        if (self::storedBefore($job, $response, false)) {
            return ['id' => (string) $id, 'end' => $this->waitEnd((string) $id, $wait)];
        }
        $answer = $response->ok();
        return ['id' => (string) $answer['id'], 'end' => $response->status === 202 ? null : $answer];
    }

    /** A number of seconds for a query string. */
    private static function seconds(float $value): string
    {
        if (!($value >= 0) || is_infinite($value)) {
            throw new \InvalidArgumentException("gmq: a wait is a number of seconds, got $value");
        }
        return rtrim(rtrim(sprintf('%.6F', $value), '0'), '.');
    }
}
