<?php

declare(strict_types=1);

namespace Gmq;

/**
 * A client of gmq's HTTP API (/api/v1), over PHP's streams: no extension
 * beyond ext-json. It holds no connection between calls, so a forked worker
 * process may use its copy freely.
 *
 * Every call sends the token (Authorization: Bearer) when one is given,
 * waits for an answer up to $timeout seconds (a long poll: its wait plus
 * $timeout), and retries an answer of 503 (Redis unreachable, busy) up to
 * $retries times, waiting what gmq's Retry-After asks (it says 1 s) or a
 * backoff from 0.25 s doubling, each wait capped at $maxBackoff seconds.
 * A 503 promises nothing either way, so a retry may find its earlier try
 * done; the calls below say how they read that.
 *
 * Popped jobs are arrays with gmq's fields: id, topic, body, TTR (seconds),
 * attempt and token (pass them back to ack, fail, touch...: the token
 * names this delivery, so a late call never reaches a job pushed again
 * with the same id; ackMany, failMany and the worker send it themselves),
 * state, priority, due, failures, last_error, group (when it has one), ...
 * A completed job (see ack) also has completed_at (RFC 3339) and result
 * (decoded as a body is), and a job pushed with its own keep_completed has it.
 * A job its consumer reported on (see progress) has progress and log
 * ([['at' => RFC 3339, 'line' => ...], ...]); a cancelled one (see
 * cancel) cancelled_at, a reserved one whose cancel was asked cancelling.
 * A job pushed with workflow fields (see push) has them too: after (the
 * ids it waits for), waiting_for (those not completed yet), with its
 * with_results dependency_results (their results by id), then and on_dead
 * (the ids its follow-ups will have, until they are pushed), and batch
 * (the id of its batch: see createBatch).
 *
 * A body is a string, or an array or object sent as JSON (json_encode: a
 * list as a JSON array, an associative array, a stdClass or a
 * JsonSerializable as an object). gmq keeps its compact text and gives it
 * back as it came: a popped job's body is then that JSON decoded as
 * arrays (json_decode(..., true): an empty object comes back as []), while
 * a string stays a string, even one whose text is JSON.
 *
 * A popped job that json_decode cannot read (a lone UTF-16 surrogate
 * escape, "\ud800", or objects and arrays nested past its 512, which gmq
 * refuses since issue 49 but a job stored before may hold) still comes back, from pop, popMany and the pops with
 * an ack: its 'body' null and 'decode_error' saying why, its other fields
 * read as usual, so that the caller can fail it by its id, attempt and
 * token (the worker does). Nothing is thrown for it: the job is reserved,
 * and a throw would leave it so until its TTR, again at every pop.
 *
 * Cron schedules (setSchedule, fireSchedule, ...) live in gmq's Redis and
 * every broker fires them, each fire once (Schedules). Batches
 * (createBatch, getBatch, ...) count their jobs' ends and push callbacks
 * when all have ended (Batches). events() is a generator of the topics'
 * events as they happen (Events).
 */
class Client
{
    use Batches;
    use Events;
    use Outcomes;
    use Schedules;

    /** The 'type' of the event events() yields when the broker no longer keeps events that were missed. */
    public const LOST = 'lost';

    private readonly Http $http;

    public function __construct(
        string $base = 'http://127.0.0.1:8000',
        float $timeout = 10.0,
        ?string $token = null,
        int $retries = 3,
        float $maxBackoff = 5.0,
    ) {
        if ($timeout <= 0 || $retries < 0 || $maxBackoff < 0) {
            throw new \InvalidArgumentException("gmq: timeout must be > 0, retries and maxBackoff >= 0; got $timeout, $retries, $maxBackoff");
        }
        if ($token !== null && preg_match('/[\x00-\x20\x7f]/', $token)) {
            // It goes into a header line: a newline would add headers of its own.
            throw new \InvalidArgumentException('gmq: the token holds a space or a control character (a newline read from a file?)');
        }
        $this->http = new Http(rtrim($base, '/'), $token, $timeout, $retries, $maxBackoff);
    }

    /**
     * Stores a job and returns its id. $body is a string, or an array or
     * object sent as a JSON body (see the class's comment); $delay and $ttr
     * are seconds; $retry is the job's own retry policy (max_attempts,
     * backoff, base, max, jitter), else its topic's.
     *
     * With a client $id the push is safe to retry: when a retry after a 503
     * gets 409 (a live job has this id), the earlier try was stored after
     * all, and the id is returned as stored. (If another producer pushed the
     * same id in between, it is the same answer: ids are yours to keep unique.)
     * Without an $id a retried 503 may store the job twice.
     *
     * $group is the job's fair group (1 to 200 bytes of UTF-8, no control
     * characters; else a GmqException 400): a topic with grouped jobs pops
     * its groups in turn, priority ordering the jobs within a group, and a
     * popped job has its 'group'.
     *
     * $unique (['key' => ..., 'for' => seconds, 'mode' => 'reject',
     * 'replace' or 'debounce']) keeps one job per key in the topic while the
     * key is held ('for' seconds after the push that took it), and makes
     * push return gmq's answer, not the bare id: ['id' => ..., 'internal_id'
     * => ...], plus 'unique' => 'replaced' or 'debounced' when the waiting
     * job that held the key was changed instead (the id is that job's; no
     * new job was made). A held key in mode reject throws a GmqException 409
     * whose $heldBy names the job that holds it. A reserved or finished job
     * is never changed: a fresh job takes the key.
     *
     * $keepCompleted (seconds) is how long the job is kept after its ack,
     * completed, with the ack's result (see ack), over its topic's
     * keep_completed; 0 deletes it at its ack, whatever its topic says.
     *
     * $timeout (seconds) is how long a worker's handler may run on the job:
     * a Worker stops a handler past it, or past its own timeout, whichever
     * is shorter, and fails the job. A popped job has it ('timeout').
     *
     * gmq checks an $id before a key, so a retried unique push stays one
     * job: a retry's 409 is taken as stored when it is the id's, or names
     * $id as the key's holder; another holder is thrown. Without an $id a
     * retry's 409 may name the job the first try stored (the key was taken
     * once), and a retried replace or debounce changes that job again with
     * the same data, unless it was popped in between: then a fresh job takes
     * the key. In mode reject a job done and gone before the retry is named
     * by its number: that 409 is thrown even with an $id (the job ran once).
     *
     * Workflows (gmq's docs/workflows.md). $after (ids, client or gmq's;
     * null or []: none) makes the job wait, state 'waiting', until every job
     * named has completed (acked); each must be there (else a GmqException
     * 400, "after: job N is not found"; a dead one a 409). A dependency
     * that fails otherwise (dead, cancelled, deleted...) cancels the job,
     * or, with $onDependencyFailure 'run', counts as done. $withResults
     * keeps each dependency's result, which job() shows as
     * 'dependency_results' by id. $then and $onDead (null or []: none) are
     * jobs (arrays as pushBatch takes them, without 'id' or 'unique'; a
     * $then's may have 'with_result' => true: its body becomes ['body' =>
     * its body, 'result' => this job's result]) that gmq pushes once, when
     * this job completes, or dies past its max_attempts. A retry's 409 that
     * says a dependency is dead (it died since the first try) is thrown,
     * even with an $id: it is no sign of the first try's job.
     *
     * @param null|list<string> $after
     * @param null|list<array<string, mixed>> $then
     * @param null|list<array<string, mixed>> $onDead
     */
    public function push(string $topic, string|array|object $body, float $delay = 0, ?float $ttr = null, ?int $priority = null, ?string $id = null, ?array $retry = null, ?array $unique = null, ?string $group = null, ?float $keepCompleted = null, ?float $timeout = null, ?array $after = null, ?string $onDependencyFailure = null, bool $withResults = false, ?array $then = null, ?array $onDead = null): string|array
    {
        $job = self::pushFields($topic, $body, $delay, $ttr, $priority, $id, $retry, $unique, $group, $keepCompleted, $timeout)
            + self::workflowFields($after, $onDependencyFailure, $withResults, $then, $onDead);
        $answer = $this->pushOne($job, false);
        return $unique === null ? $answer['id'] : $answer;
    }

    /** A pushed job's fields (push's arguments), those given. */
    private static function pushFields(string $topic, string|array|object $body, float $delay, ?float $ttr, ?int $priority, ?string $id, ?array $retry, ?array $unique, ?string $group, ?float $keepCompleted, ?float $timeout = null): array
    {
        $given = ['TTR' => $ttr, 'priority' => $priority, 'id' => $id, 'retry' => $retry, 'unique' => $unique,
            'group' => $group, 'keep_completed' => $keepCompleted, 'timeout' => $timeout];
        return ['topic' => $topic, 'body' => $body, 'delay' => $delay] + array_filter($given, fn ($v) => $v !== null);
    }

    /** A pushed job's workflow fields (push's arguments), those given: an empty list is none. */
    private static function workflowFields(?array $after, ?string $onDependencyFailure, bool $withResults, ?array $then, ?array $onDead): array
    {
        $given = ['after' => $after === null ? null : array_map('strval', array_values($after)),
            'on_dependency_failure' => $onDependencyFailure, 'with_results' => $withResults ?: null,
            'then' => $then === null ? null : array_values($then), 'on_dead' => $onDead === null ? null : array_values($onDead)];
        return array_filter($given, fn ($v) => $v !== null && $v !== []);
    }

    /**
     * Pushes one job (push's fields) and returns gmq's answer, or just its
     * id when a 409 says an earlier try stored it: a 409 for its client id
     * (it names no holder) or a unique key held by that id, on a retry or
     * when $tried says an earlier request (a batch's) may have stored it.
     */
    private function pushOne(array $job, bool $tried): array
    {
        $response = $this->http->retrying(fn () => $this->http->send('POST', '/api/v1/jobs', $job));
        if (self::storedBefore($job, $response, $tried)) {
            return ['id' => (string) $job['id']];
        }
        return $response->ok();
    }

    /**
     * Whether a push's 409 says an earlier try stored $job: a 409 for its
     * client id (it names no holder, nor a dependency that is dead) or a
     * unique key held by that id, on a retry or when $tried says an earlier
     * request may have stored it.
     */
    private static function storedBefore(array $job, Response $response, bool $tried): bool
    {
        $id = isset($job['id']) ? (string) $job['id'] : null;
        $afterDead = isset($job['after']) && str_contains((string) ($response->answer['error'] ?? ''), 'after: job ');
        return $id !== null && $response->status === 409 && ($tried || $response->tries > 1) && !$afterDead
            && in_array($response->answer['id'] ?? null, [null, $id], true);
    }

    /**
     * Stores several jobs (arrays with topic, body, and optionally id, delay,
     * TTR, priority, retry, unique, group, keep_completed, timeout, and
     * push's workflow fields: after, on_dependency_failure, with_results,
     * then, on_dead) and returns their ids in order: all, or
     * on bad input none. A 503 part way says which were stored
     * ("stored_ids"): when every job has a client id, the retry sends only
     * the others, and after a 409 to a retry each job that answer did not
     * store is pushed on its own, its 409 read as push reads it (the id's:
     * stored; a unique key held by another job: thrown). Without client ids
     * a 503 after some were stored is not retried (the retry would store
     * them twice): the GmqException's answer has "stored_ids". gmq's answer
     * to a batch does not say what a unique job did (replaced, debounced):
     * push those with push() when you need to know.
     */
    public function pushBatch(array $jobs): array
    {
        $jobs = array_values($jobs);
        $ids = array_map(fn ($j) => isset($j['id']) ? (string) $j['id'] : null, $jobs);
        $withIds = !in_array(null, $ids, true);
        $stored = [];
        $left = $jobs;
        $response = $this->http->retrying(function (int $n) use (&$stored, &$left, &$last, $withIds) {
            if ($n > 0 && ($last->answer['stored_ids'] ?? []) !== []) {
                if (!$withIds) {
                    $last->withTries($n)->ok(); // throws the 503 with its stored_ids: not safe to resend
                }
                $stored = array_merge($stored, $last->answer['stored_ids']);
                $left = array_values(array_filter($left, fn ($j) => !in_array((string) $j['id'], $stored, true)));
                if ($left === []) {
                    return new Response(201, ['ids' => []]);
                }
            }
            return $last = $this->http->send('POST', '/api/v1/jobs/batch', ['jobs' => $left]);
        });
        if ($withIds && $response->status === 409 && $response->tries > 1) {
            $done = array_merge($stored, $response->answer['stored_ids'] ?? []);
            foreach ($jobs as $i => $job) {
                if (!in_array($ids[$i], $done, true)) {
                    $ids[$i] = $this->pushOne($job, true)['id']; // a unique job's may be the job it changed
                }
            }
            return $ids;
        }
        $answer = $response->ok();
        return $withIds && $stored !== [] ? $ids : $answer['ids'];
    }

    /** Reserves a job from the first listed topic that has one, waiting up to $timeout seconds; null if none came. */
    public function pop(array $topics, float $timeout = 0): ?array
    {
        return $this->call('POST', '/api/v1/pop', ['topics' => array_values($topics), 'timeout' => $timeout], $timeout);
    }

    /** Reserves up to $count jobs: waits up to $timeout seconds for one, then takes as many as are ready; [] if none came. */
    public function popMany(array $topics, int $count, float $timeout = 0): array
    {
        $payload = ['topics' => array_values($topics), 'count' => $count, 'timeout' => $timeout];
        return $this->call('POST', '/api/v1/pop', $payload, $timeout)['jobs'] ?? [];
    }

    /**
     * Finishes a popped job; $attempt fences the ack to that delivery (0: any),
     * and $token (the popped job's 'token') to that job: a 404 when it is
     * gone, whatever job its id names now (one pushed again with the id).
     * A 404 on a retry means the earlier try acked it: taken as acked.
     *
     * $result (null: none) is any value json_encode encodes: gmq keeps the
     * job, completed, with it for its topic's keep_results (an hour by
     * default), or as its keep_completed (its topic's or its own) says
     * where one is set, and job() shows it as 'result'; where neither
     * keeps it (0), it is dropped with the job. One json_encode refuses (a resource, NAN,
     * invalid UTF-8) throws its \JsonException before any request; one over
     * the topic's max_result (16 KiB by default) a GmqException 413, and the
     * job stays reserved.
     *
     * $push are follow-ups: jobs (arrays as pushBatch takes them, but
     * without 'id' or 'unique'; 1 to 100) that gmq pushes once the ack
     * succeeds, each exactly once, the ack and they together or not at all.
     * ack then returns their ids, in $push's order (null without $push).
     * It returns [] when an earlier ack completed the job (gmq answers
     * "again": that ack's follow-ups stand) or a retry finds the job gone
     * (the earlier try acked it). A bad follow-up is a GmqException 400
     * (413: too big) naming it ("push: job N" or "follow-up N"); a broker
     * or store too old for follow-ups, Redis at maxmemory or a server
     * status that refuses pushes a 503 (retried as any); either way the
     * job stays reserved. An empty $push is a plain ack.
     *
     * @param null|list<array<string, mixed>> $push
     * @return null|list<string>
     */
    public function ack(string $id, int $attempt = 0, ?string $token = null, mixed $result = null, ?array $push = null): ?array
    {
        $args = self::delivery($attempt, $token) + self::result($result) + self::followUps($push);
        $response = $this->http->retrying(fn () => $this->http->send('POST', $this->jobPath($id, 'ack'), $args));
        if ($response->status === 404 && $response->tries > 1) {
            return $push === null ? null : [];
        }
        $answer = $response->ok();
        return $push === null ? null : array_map('strval', $answer['pushed'] ?? []);
    }

    /**
     * Finishes a popped job (with a $result, as ack's) and pops the next in
     * the same request; null if none came within $timeout seconds. When the
     * ack went through but the pop answered 503 (gmq says "acked"), the
     * retry only pops.
     */
    public function ackAndPop(string $id, int $attempt, array $topics, float $timeout = 0, ?string $token = null, mixed $result = null): ?array
    {
        $next = ['topics' => array_values($topics), 'timeout' => $timeout];
        $payload = self::delivery($attempt, $token) + self::result($result) + ['next' => $next];
        return $this->ackThenPop($this->jobPath($id, 'ack'), $payload, $next, $timeout);
    }

    /**
     * Finishes popped jobs (each fenced by its attempt and token, and with
     * its 'result' and its follow-ups, 'push', when it has them, as ack's)
     * in one request and, with $count > 0, pops up to $count more. Returns
     * gmq's answer: 'acked' (ids), 'failed' ([id, status, error]), with
     * follow-ups 'pushed' ([acked id => the follow-ups' ids]) and, with
     * $count, 'jobs'. A follow-up gmq cannot read fails the whole request
     * (400); one it refuses at the ack (an 'id', a 'unique') fails that
     * job's ack alone. As with
     * ackAndPop, a pop that failed after the acks (503) is retried alone;
     * the answer then lists the acks that earlier try reported.
     */
    public function ackMany(array $jobs, array $topics = [], int $count = 0, float $timeout = 0): array
    {
        $payload = ['jobs' => array_map(fn ($j) => ['id' => $j['id']] + self::delivery($j['attempt'] ?? 0, $j['token'] ?? null) + self::result($j['result'] ?? null) + self::followUps($j['push'] ?? null), array_values($jobs))];
        if ($count <= 0) {
            return $this->call('POST', '/api/v1/ack', $payload);
        }
        $next = ['topics' => array_values($topics), 'count' => $count, 'timeout' => $timeout];
        $answer = $this->ackThenPop('/api/v1/ack', $payload + ['next' => $next], $next, $timeout, $acked) ?? [];
        if ($acked !== null) { // the acks went through on an earlier try; this answer is the pop's
            $answer += ['acked' => $acked['acked'] ?? [], 'failed' => $acked['failed'] ?? []];
        }
        return $answer + ['acked' => [], 'failed' => [], 'jobs' => []];
    }

    /**
     * Reports that a popped job failed, with why: it waits its retry
     * policy's backoff, or goes to its topic's dead set past max_attempts.
     * Returns the job as it now is (state "delayed" or "dead").
     */
    public function fail(string $id, int $attempt = 0, string $error = '', ?string $token = null): array
    {
        return $this->call('POST', $this->jobPath($id, 'fail'), self::delivery($attempt, $token) + ['error' => $error]);
    }

    /** Reports several failures in one request (each fenced by its attempt and token): "jobs" (as they now are) and "failed". */
    public function failMany(array $jobs, string $error = ''): array
    {
        $payload = ['jobs' => array_map(fn ($j) => ['id' => $j['id']] + self::delivery($j['attempt'] ?? 0, $j['token'] ?? null) + ['error' => $error], array_values($jobs))];
        return $this->call('POST', '/api/v1/fail', $payload);
    }

    /** Gives a popped job back, ready again after $delay seconds; returns it as it now is. */
    public function release(string $id, int $attempt = 0, float $delay = 0, ?int $priority = null, ?string $token = null): array
    {
        $args = self::delivery($attempt, $token) + ['delay' => $delay];
        if ($priority !== null) $args['priority'] = $priority;
        return $this->call('POST', $this->jobPath($id, 'release'), $args);
    }

    /** Parks a popped job until it is kicked; returns it as it now is. */
    public function bury(string $id, int $attempt = 0, ?int $priority = null, ?string $token = null): array
    {
        $args = self::delivery($attempt, $token);
        if ($priority !== null) $args['priority'] = $priority;
        return $this->call('POST', $this->jobPath($id, 'bury'), $args);
    }

    /**
     * Changes a ready or delayed job's delay (seconds from now; 0: ready at
     * once), priority or body (a string, or an array or object: a JSON body,
     * as push's), those given, in one step; returns the job as it
     * now is. A reserved, buried or dead job throws a GmqException with status 409.
     */
    public function update(string $id, ?float $delay = null, ?int $priority = null, string|array|object|null $body = null): array
    {
        $args = [];
        if ($delay !== null) $args['delay'] = $delay;
        if ($priority !== null) $args['priority'] = $priority;
        if ($body !== null) $args['body'] = $body;
        return $this->call('PATCH', '/api/v1/jobs/' . rawurlencode($id), $args);
    }

    /** Gives a popped job a fresh TTR; returns it as it now is. */
    public function touch(string $id, int $attempt = 0, ?string $token = null): array
    {
        return $this->call('POST', $this->jobPath($id, 'touch'), self::delivery($attempt, $token));
    }

    /**
     * Looks at a job in any state (state, attempt, failures, last_error, ...;
     * a completed job's completed_at and result, its own keep_completed); a
     * GmqException 404 once it is deleted, or acked where it is not kept.
     */
    public function job(string $id): array
    {
        return $this->call('GET', '/api/v1/jobs/' . rawurlencode($id), null);
    }

    /**
     * Frees $topic's unique key before its window ends, whatever became of
     * the job that took it: the next push with the key makes a new job. A
     * GmqException 404 when the key is not held; a retry's 404 means an
     * earlier try released it.
     */
    public function releaseUnique(string $topic, string $key): void
    {
        $this->delete('/api/v1/topics/' . rawurlencode($topic) . '/unique/' . rawurlencode($key));
    }

    /**
     * A worker loop over $topics: see Worker. For example
     * $client->worker(['mail'], fn (array $job) => send($job['body']), concurrency: 4)->run();
     *
     * @param callable(array): mixed $handler
     * @param null|callable(string): void $log
     */
    public function worker(array $topics, callable $handler, int $concurrency = 1, float $wait = 5.0, int $maxJobs = 0, ?callable $log = null, int $timeout = 0): Worker
    {
        return new Worker($this, $topics, $handler, $concurrency, $wait, $maxJobs, $log, $timeout);
    }

    /**
     * The fields of a call on a popped job's delivery: its attempt, and its
     * token when it has one (a broker too old to hand one out gives none).
     */
    private static function delivery(int $attempt, ?string $token): array
    {
        return $token === null || $token === '' ? ['attempt' => $attempt] : ['attempt' => $attempt, 'token' => $token];
    }

    /** An ack's result field: none for null. */
    private static function result(mixed $result): array
    {
        return $result === null ? [] : ['result' => $result];
    }

    /** An ack's follow-ups field: none for null or none. */
    private static function followUps(?array $push): array
    {
        return $push === null || $push === [] ? [] : ['push' => array_values($push)];
    }

    private function jobPath(string $id, string $action): string
    {
        return '/api/v1/jobs/' . rawurlencode($id) . '/' . $action;
    }

    /** A DELETE whose 404 on a retry means an earlier try did it. */
    private function delete(string $path): void
    {
        $response = $this->http->retrying(fn () => $this->http->send('DELETE', $path, null));
        if ($response->status === 404 && $response->tries > 1) {
            return;
        }
        $response->ok();
    }

    /** One call with the retries on 503: the answer of a success (null for none), else a GmqException. */
    private function call(string $method, string $path, ?array $payload, float $wait = 0): ?array
    {
        return $this->http->retrying(fn () => $this->http->send($method, $path, $payload, $wait))->ok();
    }

    /**
     * An ack that pops the next: once a 503 says the ack went through
     * ("acked"), the retries send only the pop ($next to /api/v1/pop), and
     * $acked is set to that 503's answer (its "acked" and "failed").
     */
    private function ackThenPop(string $path, array $payload, array $next, float $wait, ?array &$acked = null): ?array
    {
        $response = $this->http->retrying(function () use (&$path, &$payload, &$last, &$acked, $next, $wait) {
            if (isset($last->answer['acked']) && $acked === null) {
                [$path, $payload, $acked] = ['/api/v1/pop', $next, $last->answer];
            }
            return $last = $this->http->send('POST', $path, $payload, $wait);
        });
        return $response->ok();
    }
}
