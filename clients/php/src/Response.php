<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal One answer of gmq: its status, its JSON body (null for none,
 * a 204's), the Retry-After it asked for, and how many tries it took.
 */
final class Response
{
    public function __construct(
        public readonly int $status,
        public readonly ?array $answer,
        public readonly ?float $retryAfter = null,
        public readonly int $tries = 1,
    ) {
    }

    /**
     * Reads an answer from its raw header lines (PHP's $http_response_header:
     * the status line first; after a redirect, the last response's lines
     * follow) and body. $what names the request in errors.
     *
     * @param list<string> $headers
     */
    public static function parse(string $what, array $headers, string $body): self
    {
        $status = 0;
        $retryAfter = null;
        foreach ($headers as $line) {
            if (preg_match('{^HTTP/\S+\s+(\d{3})}', $line, $m)) {
                [$status, $retryAfter] = [(int) $m[1], null]; // a new response begins
            } elseif (preg_match('{^Retry-After:\s*(\d+(?:\.\d+)?)\s*$}i', $line, $m)) {
                $retryAfter = (float) $m[1]; // seconds; an HTTP date is left to the backoff
            }
        }
        if ($status === 0) {
            throw new GmqException(0, "$what: no HTTP status line in the answer");
        }
        if (trim($body) === '') {
            return new self($status, null, $retryAfter);
        }
        $answer = json_decode($body, true);
        if ($answer === null && in_array(json_last_error(), [JSON_ERROR_UTF16, JSON_ERROR_DEPTH], true)
            && $status >= 200 && $status < 300) {
            $answer = Undecodable::decode($body); // its jobs marked 'decode_error'
        }
        if (!is_array($answer)) {
            // A proxy's page, say: keep its start for the message.
            throw new GmqException($status, "$what: the answer is not JSON: " . substr($body, 0, 200));
        }
        return new self($status, $answer, $retryAfter);
    }

    public function withTries(int $tries): self
    {
        return new self($this->status, $this->answer, $this->retryAfter, $tries);
    }

    /**
     * The answer of a success (2xx); throws GmqException with gmq's reason
     * for any other status (a JobCancelled for a 410).
     */
    public function ok(): ?array
    {
        if ($this->status >= 200 && $this->status < 300) {
            return $this->answer;
        }
        $reason = is_string($this->answer['error'] ?? null) ? $this->answer['error'] : 'HTTP status ' . $this->status;
        if ($this->tries > 1) {
            $reason .= " (after $this->tries tries)";
        }
        if ($this->status === 410) {
            throw new JobCancelled($reason, $this->answer);
        }
        throw new GmqException($this->status, $reason, $this->answer);
    }
}
