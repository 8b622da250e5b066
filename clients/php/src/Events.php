<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal Client's stream of the topics' events (GET /api/v1/events,
 * Server-Sent Events), as a generator that connects again by itself.
 */
trait Events
{
    /**
     * A generator of the events of $topics (those with events = true), of
     * $types (null: all), as they happen: each is gmq's JSON decoded as
     * arrays ('type', 'topic', 'id' (the job's), 'internal_id', 'attempt',
     * 'at', and 'result', 'error', 'progress' or 'detail' when it carries
     * one, 'cut' => true when that was cut at 1 KiB) with 'event_id', the
     * stream's position after it, which is also its key. A lost event
     * (['type' => Client::LOST, 'buckets', 'error', 'event_id']) says the
     * broker no longer keeps events that were missed.
     *
     * A connection that drops, stays silent for $idleTimeout seconds (the
     * broker sends a keep-alive every 15 s), ends because the consumer fell
     * behind (the broker's lagging event), or fails for want of a broker (no
     * answer, 5xx, 429: max_waiting reached) is made again by itself, with
     * the last event's 'event_id' as Last-Event-ID, so that no event is
     * missed or repeated: after the client's backoff (0.25 s doubling up to
     * $maxBackoff; at once after falling behind), each told to $log. A
     * refusal no retry mends (400: an unknown type, a bad $lastEventId;
     * 401) throws a GmqException. Until the first event comes, a reconnect
     * starts from the broker's now.
     *
     * $lastEventId (an event's 'event_id') starts after that event; $onReady
     * is called each time a connection is in place. Leaving the foreach
     * (break, return) closes the stream.
     *
     * @param list<string> $topics
     * @param null|list<string> $types
     * @param null|callable(): void $onReady
     * @param null|callable(string): void $log told of each reconnect (default: none)
     * @return \Generator<string, array>
     */
    public function events(array $topics, ?array $types = null, ?string $lastEventId = null, float $idleTimeout = 45.0, ?callable $onReady = null, ?callable $log = null): \Generator
    {
        if ($topics === [] || $idleTimeout <= 0) {
            throw new \InvalidArgumentException('gmq events: give at least one topic, and an idleTimeout over 0');
        }
        $query = ['topics' => implode(',', $topics)] + ($types ? ['types' => implode(',', $types)] : []);
        return $this->eventStream('/api/v1/events?' . http_build_query($query), $lastEventId, $idleTimeout,
            $onReady ?? static function (): void {
            }, $log ?? static function (string $line): void {
            });
    }

    /** The generator events() returns: connects, yields, connects again. */
    private function eventStream(string $path, ?string $last, float $idleTimeout, callable $onReady, callable $log): \Generator
    {
        for ($failures = 0; ; $failures++) {
            [$why, $wait] = ['the stream ended', null];
            try {
                $opened = $this->http->stream($path, $last, $idleTimeout);
                if ($opened instanceof Response) {
                    $status = $opened->status;
                    if ($status >= 400 && $status < 500 && $status !== 408 && $status !== 429) {
                        $opened->ok(); // throws its GmqException
                    }
                    [$why, $wait] = ["HTTP $status", $this->http->backoff($failures, $opened->retryAfter)];
                } else {
                    try {
                        while (($event = $opened->next()) !== null) {
                            [$name, $id, $data] = $event;
                            $last = $id !== '' ? $id : $last;
                            if ($name === 'ready') {
                                $failures = 0;
                                $onReady();
                            } elseif ($name === 'lagging') {
                                [$why, $wait] = ['its consumer fell behind', 0.0];
                                break;
                            } elseif (in_array($name, ['', 'message', self::LOST], true)) {
                                yield $id => self::event($name, $id, $data);
                            }
                        }
                        $why = $wait === null ? $opened->why() : $why;
                    } finally {
                        $opened->close();
                    }
                }
            } catch (GmqException $e) {
                if ($e->status >= 400 && $e->status < 500 && $e->status !== 408 && $e->status !== 429) {
                    throw $e;
                }
                $why = $e->getMessage();
            }
            $wait ??= $this->http->backoff($failures, null);
            $log("gmq events: $why; connecting again in {$wait} s");
            usleep((int) round($wait * 1e6));
        }
    }

    /** An event as the generator yields it. */
    private static function event(string $name, string $id, string $data): array
    {
        $event = json_decode($data, true, flags: JSON_THROW_ON_ERROR);
        if ($name === self::LOST) {
            $event['type'] = self::LOST;
        }
        return $event + ['event_id' => $id];
    }
}
