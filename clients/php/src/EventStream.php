<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal One connection to gmq's events stream (GET /api/v1/events): its
 * Server-Sent Events, read line by line (the HTML standard's format), until
 * it ends, or stays silent for its idle timeout. Client::events connects
 * again after it.
 */
final class EventStream
{
    /** The last id an event had: the standard keeps it for the events after. */
    private string $id = '';
    /** Why the stream ended, once next() said null. */
    private string $why = 'the stream ended';

    /** @param resource $stream the answer's body, its read timeout set */
    public function __construct(private $stream, private readonly float $idleTimeout)
    {
    }

    /**
     * The next event: [name, id, data] (name '' for a job's event), or null
     * when the stream ended or was silent for the idle timeout (see why()).
     * Comments (the keep-alive) are skipped; an event without data is not
     * one.
     *
     * @return null|array{0: string, 1: string, 2: string}
     */
    public function next(): ?array
    {
        [$name, $data] = ['', null];
        while (($line = fgets($this->stream)) !== false) {
            $line = rtrim($line, "\r\n");
            if ($line === '') {
                if ($data !== null) {
                    return [$name, $this->id, $data];
                }
                $name = '';
                continue;
            }
            if ($line[0] === ':') {
                continue;
            }
            [$field, $value] = array_pad(explode(':', $line, 2), 2, '');
            $value = str_starts_with($value, ' ') ? substr($value, 1) : $value;
            if ($field === 'id' && !str_contains($value, "\0")) {
                $this->id = $value;
            } elseif ($field === 'event') {
                $name = $value;
            } elseif ($field === 'data') {
                $data = $data === null ? $value : "$data\n$value";
            }
        }
        if (stream_get_meta_data($this->stream)['timed_out'] ?? false) {
            $this->why = "silent for $this->idleTimeout s";
        }
        return null;
    }

    /** Why the stream ended (after next() said null). */
    public function why(): string
    {
        return $this->why;
    }

    public function close(): void
    {
        if (is_resource($this->stream)) {
            fclose($this->stream);
        }
    }
}
