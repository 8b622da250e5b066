<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal The heartbeat process's loop (see Heartbeat): reads "begin"
 * and "end" lines from the worker, touches the job in hand every half of
 * its TTR, tells the worker (SIGUSR1, then "cancelled" at the "end") when a
 * touch finds the job cancelled, and returns when the worker's end of the
 * socket closes.
 */
final class HeartbeatChild
{
    /** The shortest time between two touches of a job, whatever its TTR. */
    private const MIN_INTERVAL = 0.2;

    private string $buffer = '';
    /** @var null|array{id: string, attempt: int, token: ?string, ttr: float} the job in hand */
    private ?array $job = null;
    private float $next = INF;
    /** A touch of the job in hand was answered 410. */
    private bool $cancelled = false;

    /**
     * @param resource $socket
     * @param callable(string): void $log
     * @param int $worker the worker process's pid, told of a cancel
     */
    public function __construct(private readonly Client $client, private $socket, private $log, private readonly int $worker)
    {
    }

    public function run(): void
    {
        pcntl_signal(SIGTERM, SIG_IGN);
        pcntl_signal(SIGINT, SIG_IGN);
        stream_set_blocking($this->socket, false);
        while ($this->read($this->job === null ? null : max(0.0, $this->next - microtime(true)))) {
            if ($this->job !== null && microtime(true) >= $this->next) {
                $this->touch();
            }
        }
    }

    /** Waits up to $wait seconds (null: for ever) for lines and handles them; false once the worker is gone. */
    private function read(?float $wait): bool
    {
        $read = [$this->socket];
        $none = null;
        $seconds = $wait === null ? null : (int) $wait;
        $micro = $wait === null ? null : (int) (($wait - (int) $wait) * 1e6);
        if (@stream_select($read, $none, $none, $seconds, $micro) < 1) {
            return true; // the time is up (or a signal came)
        }
        $chunk = fread($this->socket, 8192);
        if ($chunk === false || ($chunk === '' && feof($this->socket))) {
            return false;
        }
        $this->buffer .= $chunk;
        while (($end = strpos($this->buffer, "\n")) !== false) {
            $this->handle(substr($this->buffer, 0, $end));
            $this->buffer = substr($this->buffer, $end + 1);
        }
        return true;
    }

    private function handle(string $line): void
    {
        if ($line === 'end') {
            $this->job = null;
            fwrite($this->socket, $this->cancelled ? "cancelled\n" : "idle\n");
            $this->cancelled = false;
            return;
        }
        $this->job = json_decode($line, true, flags: JSON_THROW_ON_ERROR);
        $this->next = microtime(true) + $this->interval();
    }

    private function interval(): float
    {
        return max(self::MIN_INTERVAL, $this->job['ttr'] / 2);
    }

    /**
     * Touches the job in hand. A 410 (cancelled) ends its touches and tells
     * the worker; a 404 or 409 (acked, deleted, or its TTR ran out and it
     * went to another delivery) ends its touches; any other failure is
     * logged, and the next touch comes as planned.
     */
    private function touch(): void
    {
        $this->next = microtime(true) + $this->interval();
        try {
            $this->client->touch($this->job['id'], $this->job['attempt'], $this->job['token']);
        } catch (JobCancelled $e) {
            ($this->log)("job {$this->job['id']} was cancelled: stopping its handler");
            $this->job = null;
            $this->cancelled = true;
            if (posix_getppid() === $this->worker) { // never signal whoever took an orphan over
                posix_kill($this->worker, SIGUSR1);
            }
        } catch (GmqException $e) {
            ($this->log)("touch of job {$this->job['id']} failed: {$e->getMessage()}");
            if ($e->status === 404 || $e->status === 409) {
                $this->job = null;
            }
        }
    }
}
