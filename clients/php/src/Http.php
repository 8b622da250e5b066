<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal The HTTP exchange under Client: one request with PHP's streams
 * (no ext-curl), the token, the timeouts, and the retries on 503.
 */
final class Http
{
    /** The first wait before a retry when gmq names none; each retry doubles it, up to $maxBackoff. */
    private const FIRST_BACKOFF = 0.25;

    public function __construct(
        private readonly string $base,
        private readonly ?string $token,
        private readonly float $timeout,
        private readonly int $retries,
        private readonly float $maxBackoff,
    ) {
    }

    /**
     * Calls $try(n) for the n-th try (0 first) until its answer is not a 503
     * or the retries are spent, waiting between tries as gmq's Retry-After
     * says (and never longer than $maxBackoff), else a capped exponential
     * backoff. $try may change the request between tries: a batch push
     * resends only what the last 503 says was not stored. A 503 that $done
     * says did part of the work (a push that waits: the job it stored) is
     * not retried. Returns the last answer with its tries counted.
     *
     * @param callable(int): Response $try
     * @param null|callable(Response): bool $done
     */
    public function retrying(callable $try, ?callable $done = null): Response
    {
        for ($n = 0; ; $n++) {
            $response = $try($n);
            if ($response->status !== 503 || $n >= $this->retries || ($done !== null && $done($response))) {
                return $response->withTries($n + 1);
            }
            // A signal may cut the wait short (a worker told to stop): the retry comes sooner, no harm.
            usleep((int) round($this->backoff($n, $response->retryAfter) * 1e6));
        }
    }

    /** The wait before retry n+1: what gmq asked for, else 0.25 s doubled each time, both capped at $maxBackoff. */
    public function backoff(int $n, ?float $retryAfter): float
    {
        $wait = $retryAfter ?? self::FIRST_BACKOFF * (2 ** $n);
        return max(0.0, min($this->maxBackoff, $wait));
    }

    /**
     * Opens the events stream at $path (GET, Server-Sent Events), with
     * $lastEventId as Last-Event-ID when given: an EventStream whose reads
     * wait at most $idleTimeout seconds, or, for an answer other than 200,
     * that Response. Throws GmqException with status 0 when no answer came,
     * or the answer is not an event stream.
     */
    public function stream(string $path, ?string $lastEventId, float $idleTimeout): EventStream|Response
    {
        $headers = ['Accept: text/event-stream', 'Cache-Control: no-cache'];
        if ($lastEventId !== null && $lastEventId !== '') {
            $headers[] = 'Last-Event-ID: ' . preg_replace('/[\r\n]/', '', $lastEventId);
        }
        if ($this->token !== null && $this->token !== '') {
            $headers[] = 'Authorization: Bearer ' . $this->token;
        }
        $url = $this->base . $path;
        // HTTP/1.0, so the answer is not chunked: PHP's dechunk filter
        // holds a read until 8 KiB have come, and events would wait there.
        $context = stream_context_create(['http' => ['method' => 'GET', 'header' => implode("\r\n", $headers),
            'timeout' => $idleTimeout, 'ignore_errors' => true, 'protocol_version' => 1.0]]);
        error_clear_last();
        $stream = @fopen($url, 'r', false, $context);
        if ($stream === false) {
            $why = preg_replace('/^fopen\(.*?\): /', '', error_get_last()['message'] ?? 'no answer');
            throw new GmqException(0, "GET $url: $why");
        }
        $raw = stream_get_meta_data($stream)['wrapper_data'] ?? [];
        $head = Response::parse("GET $url", $raw, '');
        if ($head->status !== 200) {
            $body = (string) stream_get_contents($stream, 1 << 16);
            fclose($stream);
            return Response::parse("GET $url", $raw, $body);
        }
        if (!preg_grep('{^Content-Type:\s*text/event-stream}i', $raw)) {
            fclose($stream);
            throw new GmqException(0, "GET $url: the answer is not text/event-stream");
        }
        stream_set_timeout($stream, (int) $idleTimeout, (int) (fmod($idleTimeout, 1.0) * 1e6));
        return new EventStream($stream, $idleTimeout);
    }

    /**
     * Sends one request and returns gmq's answer, whatever its status. $wait
     * is how long gmq may hold the request (a long poll): the read timeout
     * is that plus the client's timeout, so a long poll never times out on
     * the client first. Throws GmqException with status 0 when no answer
     * came (refused, timed out) or the answer is not JSON.
     */
    public function send(string $method, string $path, ?array $payload, float $wait = 0): Response
    {
        $headers = ['Accept: application/json'];
        if ($payload !== null) {
            $headers[] = 'Content-Type: application/json';
        }
        if ($this->token !== null && $this->token !== '') {
            $headers[] = 'Authorization: Bearer ' . $this->token;
        }
        $http = ['method' => $method, 'header' => implode("\r\n", $headers), 'timeout' => $this->timeout + $wait,
            'ignore_errors' => true]; // read gmq's error answers too
        if ($payload !== null) {
            $http['content'] = json_encode($payload, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES);
        }
        $url = $this->base . $path;
        error_clear_last();
        $text = @file_get_contents($url, false, stream_context_create(['http' => $http]));
        $raw = function_exists('http_get_last_response_headers') ? http_get_last_response_headers() : ($http_response_header ?? null);
        if ($text === false || !$raw) {
            // PHP's warning, less its "file_get_contents(<url>): " prefix.
            $why = preg_replace('/^file_get_contents\(.*?\): /', '', error_get_last()['message'] ?? 'no answer');
            throw new GmqException(0, "$method $url: $why");
        }
        return Response::parse($method . ' ' . $url, $raw, $text);
    }
}
