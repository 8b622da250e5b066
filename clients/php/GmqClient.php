<?php
// A client for gmq's HTTP API for PHP 8, with PHP's streams (no extension):
//
//   require 'GmqClient.php';
//   $c = new GmqClient('http://127.0.0.1:8000');
//   $c->push('mail', 'hello', delay: 10, ttr: 30);
//   $job = $c->pop(['mail'], 5);   // null when the time is up
//   $c->ack($job['id'], $job['attempt']);

final class GmqException extends RuntimeException
{
    public function __construct(public readonly int $status, string $message)
    {
        parent::__construct("gmq: $status: $message", $status);
    }
}

final class GmqClient
{
    public function __construct(private string $base = 'http://127.0.0.1:8000', private float $timeout = 10.0)
    {
        $this->base = rtrim($base, '/');
    }

    /**
     * Stores a job and returns its id. $retry is the job's own retry policy
     * (max_attempts, backoff, base, max, jitter), else its topic's.
     */
    public function push(string $topic, string $body, float $delay = 0, ?float $ttr = null, ?int $priority = null, ?string $id = null, ?array $retry = null): string
    {
        $job = ['topic' => $topic, 'body' => $body, 'delay' => $delay];
        if ($ttr !== null) $job['TTR'] = $ttr;
        if ($priority !== null) $job['priority'] = $priority;
        if ($id !== null) $job['id'] = $id;
        if ($retry !== null) $job['retry'] = $retry;
        return $this->call('/api/v1/jobs', $job)['id'];
    }

    /** Stores several jobs (arrays with topic, body, ...): all, or on bad input none. */
    public function pushBatch(array $jobs): array
    {
        return $this->call('/api/v1/jobs/batch', ['jobs' => $jobs])['ids'];
    }

    /** Reserves a job from the first listed topic that has one, waiting up to $timeout seconds; null if none came. */
    public function pop(array $topics, float $timeout = 0): ?array
    {
        return $this->call('/api/v1/pop', ['topics' => array_values($topics), 'timeout' => $timeout], $timeout);
    }

    /** Finishes a popped job; $attempt fences the ack to that delivery. */
    public function ack(string $id, int $attempt = 0): void
    {
        $this->call($this->jobPath($id, 'ack'), ['attempt' => $attempt]);
    }

    /** Finishes a popped job and pops the next in the same request; null if none came within $timeout seconds. */
    public function ackAndPop(string $id, int $attempt, array $topics, float $timeout = 0): ?array
    {
        $payload = ['attempt' => $attempt, 'next' => ['topics' => array_values($topics), 'timeout' => $timeout]];
        return $this->call($this->jobPath($id, 'ack'), $payload, $timeout);
    }

    /** Reserves up to $count jobs: waits up to $timeout seconds for one, then takes as many as are ready; [] if none came. */
    public function popMany(array $topics, int $count, float $timeout = 0): array
    {
        $answer = $this->call('/api/v1/pop', ['topics' => array_values($topics), 'count' => $count, 'timeout' => $timeout], $timeout);
        return $answer['jobs'] ?? [];
    }

    /**
     * Finishes popped jobs (each fenced by its attempt) in one request and, with $count > 0, pops up to $count more.
     * Returns the answer: 'acked' (ids), 'failed' ([id, status, error]) and, with $count, 'jobs'.
     */
    public function ackMany(array $jobs, array $topics = [], int $count = 0, float $timeout = 0): array
    {
        $payload = ['jobs' => array_map(fn ($j) => ['id' => $j['id'], 'attempt' => $j['attempt'] ?? 0], array_values($jobs))];
        if ($count > 0) {
            $payload['next'] = ['topics' => array_values($topics), 'count' => $count, 'timeout' => $timeout];
        }
        return $this->call('/api/v1/ack', $payload, $timeout);
    }

    /**
     * Reports that a popped job failed, with why: it waits its retry policy's
     * backoff, or goes to its topic's dead set past max_attempts. Returns the
     * job as it now is (state "delayed" or "dead").
     */
    public function fail(string $id, int $attempt = 0, string $error = ''): array
    {
        return $this->call($this->jobPath($id, 'fail'), ['attempt' => $attempt, 'error' => $error]);
    }

    /** Reports several failures in one request: "jobs" (as they now are) and "failed". */
    public function failMany(array $jobs, string $error = ''): array
    {
        $payload = ['jobs' => array_map(fn ($j) => ['id' => $j['id'], 'attempt' => $j['attempt'] ?? 0, 'error' => $error], array_values($jobs))];
        return $this->call('/api/v1/fail', $payload);
    }

    /** Gives a popped job back, ready again after $delay seconds. */
    public function release(string $id, int $attempt = 0, float $delay = 0, ?int $priority = null): array
    {
        $args = ['attempt' => $attempt, 'delay' => $delay];
        if ($priority !== null) $args['priority'] = $priority;
        return $this->call($this->jobPath($id, 'release'), $args);
    }

    /** Parks a popped job until it is kicked. */
    public function bury(string $id, int $attempt = 0, ?int $priority = null): array
    {
        $args = ['attempt' => $attempt];
        if ($priority !== null) $args['priority'] = $priority;
        return $this->call($this->jobPath($id, 'bury'), $args);
    }

    /** Gives a popped job a fresh TTR. */
    public function touch(string $id, int $attempt = 0): array
    {
        return $this->call($this->jobPath($id, 'touch'), ['attempt' => $attempt]);
    }

    private function jobPath(string $id, string $action): string
    {
        return '/api/v1/jobs/' . rawurlencode($id) . '/' . $action;
    }

    private function call(string $path, array $payload, float $wait = 0): ?array
    {
        $context = stream_context_create(['http' => [
            'method' => 'POST',
            'header' => "Content-Type: application/json\r\n",
            'content' => json_encode($payload),
            'timeout' => $this->timeout + $wait,
            'ignore_errors' => true, // read gmq's error answers too
        ]]);
        $text = @file_get_contents($this->base . $path, false, $context);
        if ($text === false) {
            throw new GmqException(0, 'no answer from ' . $this->base);
        }
        preg_match('{HTTP/\S+ (\d{3})}', $http_response_header[0] ?? '', $m);
        $status = (int)($m[1] ?? 0);
        if ($status === 204) {
            return null;
        }
        $answer = json_decode($text, true);
        if ($status >= 300) {
            throw new GmqException($status, $answer['error'] ?? $text);
        }
        return $answer;
    }
}
