<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal The worker's stop signals, SIGTERM and SIGINT: caught while it
 * runs (async signals, so a stop is seen without pcntl_signal_dispatch
 * calls in the loop), blocked while a handler runs, and given back as they
 * were when run() returns.
 */
final class Signals
{
    private const STOP = [SIGTERM, SIGINT];

    /**
     * Calls $stop on SIGTERM or SIGINT from now on; returns what to give
     * restore(). System calls a signal interrupts are restarted: a long
     * poll under way is not cut short (PHP also retries its reads).
     */
    public static function catch(callable $stop): array
    {
        $previous = ['async' => pcntl_async_signals(true), 'handlers' => []];
        foreach (self::STOP as $signal) {
            $previous['handlers'][$signal] = pcntl_signal_get_handler($signal);
            pcntl_signal($signal, static function () use ($stop): void {
                $stop();
            });
        }
        return $previous;
    }

    /** Gives back the handlers and async mode catch() replaced. */
    public static function restore(array $previous): void
    {
        foreach ($previous['handlers'] as $signal => $handler) {
            pcntl_signal($signal, $handler);
        }
        pcntl_async_signals($previous['async']);
    }

    /** Holds SIGTERM and SIGINT back until unblock(); returns the mask to put back (null without pcntl). */
    public static function block(): ?array
    {
        if (!function_exists('pcntl_sigprocmask')) {
            return null;
        }
        pcntl_sigprocmask(SIG_BLOCK, self::STOP, $old);
        return $old;
    }

    /** Puts the mask back: a signal held back is handled now. */
    public static function unblock(?array $old): void
    {
        if ($old !== null) {
            pcntl_sigprocmask(SIG_SETMASK, $old);
        }
    }
}
