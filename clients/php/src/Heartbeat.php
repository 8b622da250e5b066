<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal A worker process's helper that touches the job in hand while
 * its handler runs: a child process forked once, before any handler ran,
 * told over a socket pair when a job starts ("begin", a JSON line) and
 * ends ("end", answered "idle" once no touch is under way, so none goes
 * out after the ack, or "cancelled" when a touch was answered 410).
 *
 * A touch answered 410 (the job was cancelled) ends the job's touches and
 * sends the worker process SIGUSR1, which the worker turns into a
 * JobCancelled thrown into the handler (see Worker).
 *
 * Why a process: PHP runs one thing at a time, and a signal (SIGALRM)
 * would touch only between the handler's PHP statements: a handler
 * blocked in a slow query or HTTP call for longer than the TTR would lose
 * its job, and one in sleep() would wake early. The child is free of both.
 *
 * The child ends when its socket closes: when the worker closes it, or dies
 * (SIGKILL included), so a dead worker's job is not kept alive and comes
 * back after its TTR. It ignores SIGTERM and SIGINT (a Ctrl-C reaches the
 * whole process group) so that it touches until the job in hand is done.
 */
final class Heartbeat
{
    /** How long the worker waits for "idle": a touch under way with its retries on 503. */
    private const IDLE_WAIT = 60;

    /** @param resource $socket */
    private function __construct(private $socket, private readonly int $pid)
    {
    }

    /**
     * Forks the helper; null when it cannot be forked (the worker then runs
     * without touches, and says so through $log).
     *
     * @param callable(string): void $log
     */
    public static function start(Client $client, callable $log): ?self
    {
        $worker = getmypid();
        $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        if ($pair === false) {
            $log('no socket pair for the heartbeat: jobs will not be touched');
            return null;
        }
        $pid = pcntl_fork();
        if ($pid === -1) {
            $log('cannot fork the heartbeat: jobs will not be touched: ' . pcntl_strerror(pcntl_get_last_error()));
            return null;
        }
        if ($pid === 0) {
            fclose($pair[0]);
            (new HeartbeatChild($client, $pair[1], $log, $worker))->run();
            // End without PHP's shutdown: the destructors and shutdown
            // functions inherited from the worker (a database handle's, say)
            // would close what the worker still uses.
            posix_kill(posix_getpid(), SIGKILL);
        }
        fclose($pair[1]);
        return new self($pair[0], $pid);
    }

    /** Starts touching $job every half of its TTR, from now. */
    public function begin(array $job): void
    {
        $line = json_encode(['id' => (string) $job['id'], 'attempt' => (int) ($job['attempt'] ?? 0),
            'token' => $job['token'] ?? null, 'ttr' => (float) ($job['TTR'] ?? 0)], JSON_THROW_ON_ERROR) . "\n";
        if (@fwrite($this->socket, $line) !== strlen($line)) {
            throw new GmqException(0, 'the heartbeat process is gone');
        }
    }

    /**
     * Stops the touches, and returns once none is under way: whether a
     * touch found the job cancelled (410).
     */
    public function end(): bool
    {
        if (@fwrite($this->socket, "end\n") !== 4) {
            throw new GmqException(0, 'the heartbeat process is gone');
        }
        stream_set_timeout($this->socket, self::IDLE_WAIT);
        $answer = fgets($this->socket);
        if ($answer !== "idle\n" && $answer !== "cancelled\n") {
            throw new GmqException(0, 'the heartbeat process did not answer');
        }
        return $answer === "cancelled\n";
    }

    /** Ends the helper: closing the socket is its signal; then reaps it. */
    public function close(): void
    {
        if (is_resource($this->socket)) {
            fclose($this->socket);
        }
        pcntl_waitpid($this->pid, $status);
    }

    /** Ends a helper that stopped answering, and reaps it. */
    public function kill(): void
    {
        posix_kill($this->pid, SIGKILL);
        $this->close();
    }
}
