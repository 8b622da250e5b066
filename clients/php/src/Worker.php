<?php

declare(strict_types=1);

namespace Gmq;

/**
 * A worker loop: pops jobs from its topics with a long poll, runs the
 * handler on each, and
 *  - acks the job when the handler returns, with what it returned as the
 *    ack's result (null: none; see Client::ack), which gmq keeps with the
 *    job where its topic keeps completed jobs. A result json_encode
 *    refuses, or one over the topic's max_result (413), is logged and
 *    dropped, and the job acked without it: it was done, and is not run
 *    again for its result. A Done it returns carries the result and
 *    follow-ups, jobs gmq pushes once the ack succeeds (see Done);
 *  - fails it when the handler throws, with "<class>: <message>" as the
 *    job's last_error (it is retried after its backoff, or goes to the
 *    dead set past its max_attempts);
 *  - fails a job it cannot decode (one whose pop marks it 'decode_error':
 *    see Client::pop) with that reason, without running the handler, so
 *    it is retried or dies by its policy rather than left reserved;
 *  - touches it every half of its TTR while the handler runs, from a helper
 *    process (Heartbeat), so a long job is not given to another worker;
 *  - when the job is cancelled while the handler runs (Client::cancel),
 *    stops the handler as its timeout does: the touch that learns it (gmq
 *    answers 410) has the helper send SIGUSR1, and a JobCancelled is thrown
 *    into the handler; a progress() call of the handler's that learns it
 *    throws the JobCancelled itself. The job has ended, so it is neither
 *    acked nor failed, whatever the handler does after, and the worker logs
 *    it. A handler that finishes before its job's first touch is told
 *    nothing: its ack's 410 is logged. The worker process takes SIGUSR1
 *    for this while it runs;
 *  - stops on SIGTERM or SIGINT (or stop()): no more pops, the job in hand
 *    finishes and is acked or failed, then run() returns. A long poll
 *    under way when the stop comes is let finish (up to $wait seconds);
 *    a job it brings is released at once, not run, for another worker.
 *
 * With $concurrency N > 1, run() forks N worker processes and supervises
 * them: one that dies (a fatal error, SIGKILL) is replaced after a second,
 * its job coming back to some worker after its TTR; one that did its
 * $maxJobs is replaced at once; a stop reaches them all, and run() returns
 * once they have finished. Open connections (a
 * database's) in the handler, not before run(): forked processes must
 * not share them.
 *
 * Without ext-pcntl and ext-posix the worker runs in one process, with no
 * touches (a handler must finish within the TTR, or touch the job itself)
 * and no signal handling: a cancel is learnt only at a progress() call or
 * at the ack.
 */
final class Worker
{
    /** How long a failed pop, or a crashed worker process, waits before the next try. */
    private const PAUSE = 1.0;

    /** A child's exit status for an error that retrying cannot fix (a wrong token, a bad topic). */
    private const EXIT_PERMANENT = 2;

    /** The longest last_error sent: the exception's class and message, not its trace. */
    private const MAX_ERROR = 2000;

    /** @var callable(array): mixed */
    private $handler;
    /** @var callable(string): void */
    private $log;
    private bool $stopping = false;
    private ?Heartbeat $heart = null;
    /** The supervisor's pid in a forked worker process, to notice being orphaned. */
    private ?int $supervisor = null;
    /** The handler runs: a SIGUSR1 (its job was cancelled) is thrown into it. */
    private bool $inHandler = false;
    /** A SIGUSR1 came for the job in hand. */
    private bool $cancelSeen = false;

    /**
     * @param list<string> $topics popped in order: the first that has a job gives it
     * @param callable(array): mixed $handler runs one job (gmq's fields: id, topic, body, TTR, attempt, ...);
     *                                         what it returns is the job's result (null: none), or a
     *                                         Done: a result and follow-ups
     * @param float $wait the long poll, seconds; a stop may wait for one to finish
     * @param int $maxJobs a worker process ends after this many jobs (0: never), to free what leaked:
     *                     run() returns, or with $concurrency > 1 the supervisor starts a fresh process
     * @param null|callable(string): void $log problems, one line each (default: STDERR)
     * @param int $timeout seconds a handler may run (0: no limit; a job pushed with a timeout of its own
     *                     has the shorter, rounded up to whole seconds): past it a HandlerTimeout is
     *                     thrown into it (SIGALRM: needs ext-pcntl), and the job is failed with its message
     */
    public function __construct(
        private readonly Client $client,
        private readonly array $topics,
        callable $handler,
        private readonly int $concurrency = 1,
        private readonly float $wait = 5.0,
        private readonly int $maxJobs = 0,
        ?callable $log = null,
        private readonly int $timeout = 0,
    ) {
        if ($topics === [] || $concurrency < 1 || $wait <= 0 || $maxJobs < 0 || $timeout < 0) {
            throw new \InvalidArgumentException('gmq worker: give at least one topic, concurrency >= 1, wait > 0, maxJobs >= 0, timeout >= 0');
        }
        $this->handler = $handler;
        $print = $log ?? static function (string $line): void {
            fwrite(STDERR, $line . "\n");
        };
        $this->log = static fn (string $line) => $print('gmq worker ' . getmypid() . ': ' . $line);
    }

    /** Runs until stopped (or, with $maxJobs, done); see the class comment. */
    public function run(): void
    {
        $this->stopping = false;
        if (!self::canFork()) {
            if ($this->concurrency > 1) {
                ($this->log)("ext-pcntl or ext-posix is missing: one worker process, not $this->concurrency");
            }
            $this->work();
            return;
        }
        $previous = Signals::catch(fn () => $this->stopping = true);
        try {
            $this->concurrency > 1 ? $this->supervise() : $this->work();
        } finally {
            Signals::restore($previous);
        }
    }

    /**
     * Asks the worker to stop after the job in hand, as SIGTERM does: from a
     * handler, say. In a forked worker process it stops them all, through
     * the supervisor.
     */
    public function stop(): void
    {
        $this->stopping = true;
        if ($this->supervisor !== null) {
            posix_kill($this->supervisor, SIGTERM);
        }
    }

    private static function canFork(): bool
    {
        return function_exists('pcntl_fork') && function_exists('posix_kill');
    }

    /** The loop of one worker process. */
    private function work(): void
    {
        $restore = null;
        if (self::canFork()) {
            $restore = $this->catchCancels();
            $this->heart = Heartbeat::start($this->client, $this->log);
        }
        try {
            for ($done = 0; !$this->stopping && ($this->maxJobs === 0 || $done < $this->maxJobs);) {
                if ($this->supervisor !== null && posix_getppid() !== $this->supervisor) {
                    ($this->log)('the supervisor is gone: stopping');
                    break;
                }
                $job = $this->next();
                if ($job === null) {
                    continue;
                }
                if ($this->stopping) {
                    $this->giveBack($job);
                    break;
                }
                if (isset($job['decode_error'])) { // no handler can take it: failed, not left reserved
                    $this->finish($job, $job['decode_error'], null);
                    $done++;
                    continue;
                }
                $this->process($job);
                $done++;
            }
        } finally {
            $this->heart?->close();
            $this->heart = null;
            if ($restore !== null) {
                $restore();
            }
        }
    }

    /**
     * Takes SIGUSR1, the heartbeat's word that the job in hand was
     * cancelled: thrown into the handler as a JobCancelled while it runs,
     * noted otherwise. Returns what gives the previous handler back.
     */
    private function catchCancels(): \Closure
    {
        $async = pcntl_async_signals(true);
        $previous = pcntl_signal_get_handler(SIGUSR1);
        pcntl_signal(SIGUSR1, function (): void {
            $this->cancelSeen = true;
            if ($this->inHandler) {
                $this->inHandler = false;
                throw new JobCancelled('the job was cancelled (learnt at its touch)');
            }
        });
        return static function () use ($previous, $async): void {
            pcntl_signal(SIGUSR1, $previous);
            pcntl_async_signals($async);
        };
    }

    /**
     * Pops the next job; null when none came within $wait, or when the pop
     * failed with something a retry may fix (no answer, 5xx), after a pause.
     * A 4xx (a wrong token, a bad topic) is thrown: retrying would not help.
     */
    private function next(): ?array
    {
        try {
            return $this->client->pop($this->topics, $this->wait);
        } catch (GmqException $e) {
            if ($e->status >= 400 && $e->status < 500 && $e->status !== 429) {
                throw $e;
            }
            ($this->log)("pop failed, trying again in a second: {$e->getMessage()}");
            usleep((int) (self::PAUSE * 1e6)); // a stop's signal cuts it short
            return null;
        }
    }

    /** Releases a job that a long poll brought after the stop: ready at once for another worker. */
    private function giveBack(array $job): void
    {
        try {
            $this->client->release((string) $job['id'], (int) $job['attempt'], token: $job['token'] ?? null);
        } catch (GmqException $e) {
            ($this->log)("release of job {$job['id']} (popped while stopping) failed, it comes back after its TTR: {$e->getMessage()}");
        }
    }

    /**
     * Runs the handler on $job, touched meanwhile, then acks or fails it.
     * SIGTERM and SIGINT wait while the handler runs, so that they do not cut
     * its sleeps and system calls short; the stop they ask for comes after.
     */
    private function process(array $job): void
    {
        $this->cancelSeen = false;
        $this->beginTouches($job);
        $blocked = Signals::block();
        $alarm = $this->alarm($limit = $this->limit($job));
        [$result, $cancelled] = [null, false];
        try {
            try {
                $this->inHandler = true;
                $result = ($this->handler)($job);
            } finally {
                $this->inHandler = false; // a SIGUSR1 before this line throws here: caught below
            }
            $error = null;
        } catch (JobCancelled $e) { // a touch's (SIGUSR1), or a call of the handler's, 410
            [$error, $cancelled] = [self::reason($e), true];
        } catch (\Throwable $e) {
            $error = self::reason($e);
        } finally {
            $timedOut = $alarm !== null && $alarm();
            Signals::unblock($blocked);
            $cancelled = $this->endTouches() || $cancelled || $this->cancelSeen;
        }
        if ($cancelled) {
            ($this->log)("job {$job['id']} was cancelled: its handler was stopped; neither acked nor failed");
            return;
        }
        if ($timedOut) { // failed so, whatever the handler did with the HandlerTimeout
            $error = (new HandlerTimeout($limit))->getMessage();
        }
        $this->finish($job, $error, $result);
    }

    /**
     * How long a handler may run on $job, whole seconds (0: no limit): the
     * worker's timeout or the job's own ('timeout'), the shorter where both
     * are set; a job's fraction of a second is rounded up (SIGALRM counts
     * whole seconds).
     */
    private function limit(array $job): int
    {
        $own = (int) ceil(max(0.0, (float) ($job['timeout'] ?? 0)));
        if ($own === 0) {
            return $this->timeout;
        }
        return $this->timeout > 0 ? min($this->timeout, $own) : $own;
    }

    /**
     * Arms the timeout (none without one, or without ext-pcntl): a SIGALRM
     * after $limit seconds throws a HandlerTimeout into the handler.
     * Returns the disarm to call once the handler is done, which says
     * whether the alarm went off.
     */
    private function alarm(int $limit): ?\Closure
    {
        if ($limit <= 0 || !function_exists('pcntl_alarm')) {
            return null;
        }
        $fired = false;
        $async = pcntl_async_signals(true);
        $previous = pcntl_signal_get_handler(SIGALRM);
        pcntl_signal(SIGALRM, function () use (&$fired, $limit): void {
            $fired = true;
            throw new HandlerTimeout($limit);
        });
        pcntl_alarm($limit);
        return static function () use (&$fired, $previous, $async): bool {
            pcntl_alarm(0);
            pcntl_signal(SIGALRM, $previous);
            pcntl_async_signals($async);
            return $fired;
        };
    }

    /**
     * What a failed job's last_error says: the exception's class (an
     * anonymous one's class@anonymous, not its NUL-laden internal name) and
     * message, cut to MAX_ERROR bytes, invalid UTF-8 replaced (JSON would
     * refuse it).
     */
    private static function reason(\Throwable $e): string
    {
        $reason = substr(get_debug_type($e) . ': ' . $e->getMessage(), 0, self::MAX_ERROR);
        return json_decode(json_encode($reason, JSON_INVALID_UTF8_SUBSTITUTE | JSON_THROW_ON_ERROR));
    }

    /** Acks $job with $result, or fails it with $error. */
    private function finish(array $job, ?string $error, mixed $result): void
    {
        [$id, $attempt, $token] = [(string) $job['id'], (int) $job['attempt'], $job['token'] ?? null];
        try {
            if ($error === null) {
                $done = $result instanceof Done ? $result : new Done($result);
                $this->ack($id, $attempt, $token, $this->sendable($id, $done->result), $done->push);
                return;
            }
            ($this->log)("job $id failed: $error");
            $this->client->fail($id, $attempt, $error, $token);
        } catch (JobCancelled $e) {
            ($this->log)("job $id was cancelled while its handler ran: not " . ($error === null ? 'acked' : 'failed'));
        } catch (GmqException $e) {
            // A 409: its TTR ran out before this (no touches?) and it went back.
            ($this->log)(($error === null ? 'ack' : 'fail') . " of job $id failed: {$e->getMessage()}");
        }
    }

    /** The handler's result, or null (logged) when json_encode refuses it. */
    private function sendable(string $id, mixed $result): mixed
    {
        if ($result === null) {
            return null;
        }
        try {
            json_encode($result, JSON_THROW_ON_ERROR);
            return $result;
        } catch (\JsonException $e) {
            ($this->log)("job $id: its result is not JSON ({$e->getMessage()}): acking it without");
            return null;
        }
    }

    /**
     * Acks with $result and follow-ups ($push). A result gmq refuses as too
     * big (413: the ack did nothing) is dropped, and the ack sent again
     * without it. Follow-ups gmq refuses (400 or 413) fail the job (see Done).
     */
    private function ack(string $id, int $attempt, ?string $token, mixed $result, array $push): void
    {
        try {
            try {
                $this->client->ack($id, $attempt, $token, $result, $push);
            } catch (GmqException $e) {
                if ($result === null || $e->status !== 413) {
                    throw $e;
                }
                ($this->log)("job $id: its result is too big to keep ({$e->getMessage()}): acking it without");
                $this->client->ack($id, $attempt, $token, null, $push);
            }
        } catch (GmqException $e) {
            if ($push === [] || ($e->status !== 400 && $e->status !== 413)) {
                throw $e;
            }
            ($this->log)("job $id: its follow-ups were refused ({$e->getMessage()}): failing it");
            $this->client->fail($id, $attempt, $e->getMessage(), $token);
        }
    }

    private function beginTouches(array $job): void
    {
        if (!self::canFork()) {
            return;
        }
        try {
            $this->heart ??= Heartbeat::start($this->client, $this->log);
            $this->heart?->begin($job);
        } catch (GmqException $e) { // it died: one more try with a new one
            ($this->log)("{$e->getMessage()}: starting another");
            $this->heart->kill();
            $this->heart = Heartbeat::start($this->client, $this->log);
            $this->heart?->begin($job);
        }
    }

    /** Ends the job's touches: whether one found it cancelled. */
    private function endTouches(): bool
    {
        try {
            return $this->heart?->end() ?? false;
        } catch (GmqException $e) {
            ($this->log)("{$e->getMessage()}: ending it, another starts with the next job");
            $this->heart->kill();
            $this->heart = null;
            return false;
        }
    }

    /**
     * Forks the worker processes and waits for them: replaces one that
     * died (after a pause) or did its $maxJobs (at once), passes a stop on
     * to all, and returns once all have ended. A child that ended on an
     * error retrying cannot fix stops them all, and run() throws.
     */
    private function supervise(): void
    {
        $children = [];
        $permanent = null;
        for ($i = 0; $i < $this->concurrency; $i++) {
            $children[$this->spawn()] = true;
        }
        $told = false;
        while ($children !== []) {
            if (($this->stopping || $permanent !== null) && !$told) {
                array_map(fn ($pid) => posix_kill($pid, SIGTERM), array_keys($children));
                $told = true;
            }
            $pid = pcntl_wait($status, WNOHANG);
            if ($pid <= 0) {
                usleep(100_000); // a signal cuts it short
                continue;
            }
            unset($children[$pid]);
            $code = pcntl_wifexited($status) ? pcntl_wexitstatus($status) : null;
            if ($this->stopping || $permanent !== null) {
                continue;
            }
            if ($code === 0) { // it did its $maxJobs: a fresh process takes over
                $children[$this->spawn()] = true;
                continue;
            }
            if ($code === self::EXIT_PERMANENT) {
                $permanent = $pid;
                continue;
            }
            $why = $code === null ? 'signal ' . pcntl_wtermsig($status) : "exit status $code";
            ($this->log)("worker process $pid ended ($why): starting another in a second");
            usleep((int) (self::PAUSE * 1e6));
            if (!$this->stopping) {
                $children[$this->spawn()] = true;
            }
        }
        if ($permanent !== null) {
            throw new \RuntimeException("gmq worker: process $permanent stopped on an error retrying cannot fix (see its log)");
        }
    }

    /** Forks one worker process, which runs the loop and exits; returns its pid. */
    private function spawn(): int
    {
        $supervisor = getmypid();
        $pid = pcntl_fork();
        if ($pid === -1) {
            throw new \RuntimeException('gmq worker: fork: ' . pcntl_strerror(pcntl_get_last_error()));
        }
        if ($pid > 0) {
            return $pid;
        }
        $this->supervisor = $supervisor;
        $code = 0;
        try {
            Signals::catch(fn () => $this->stopping = true);
            $this->work();
        } catch (\Throwable $e) {
            ($this->log)('stopped: ' . $e->getMessage());
            $code = $e instanceof GmqException && $e->status >= 400 && $e->status < 500 ? self::EXIT_PERMANENT : 1;
        }
        exit($code);
    }
}
