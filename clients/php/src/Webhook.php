<?php

declare(strict_types=1);

namespace Gmq;

/**
 * Checking a webhook's signature, for HTTP push delivery (gmq's
 * docs/workflows.md, "HTTP push delivery"): a topic with deliver_to POSTs
 * each of its jobs to that URL, the body the job as JSON, signed with the
 * topic's deliver_secret in the Standard Webhooks form
 * (https://www.standardwebhooks.com):
 *
 *     webhook-id:        the job's number (never reused; gmq-job-id has its id)
 *     webhook-timestamp: Unix seconds, when the request was made
 *     webhook-signature: "v1,<base64 of HMAC-SHA256(key, id.timestamp.body)>"
 *                        (two, space-separated, while the secret is rotated)
 *
 * A receiver checks the signature before it trusts the body: anyone who can
 * reach its URL could otherwise make it do a job. The timestamp is signed
 * too, so a recorded request is refused once it is older than the
 * tolerance.
 */
final class Webhook
{
    /** Seconds a timestamp may be from now, either way, as Standard Webhooks advises. */
    public const TOLERANCE = 300;

    private const PREFIX = 'whsec_';

    /**
     * Checks a delivery's signature: returns when one of its v1 signatures
     * is $body's under one of $secret's keys, and throws a WebhookException
     * otherwise.
     *
     * $secret is the topic's deliver_secret ("whsec_" and base64), or two of
     * them space-separated while it is rotated: a delivery signed with either
     * passes. $headers is the request's, as getallheaders() gives them
     * ('Webhook-Id' => ...), as $_SERVER holds them ('HTTP_WEBHOOK_ID' =>
     * ...), or as a PSR-7 request's getHeaders() (each a list of values):
     * names in any case. $body is the raw body, file_get_contents('php://input'),
     * before any JSON decoding. $now is a Unix time (default: time()); the
     * timestamp may be up to $tolerance seconds from it, before or after (the
     * bound itself passes). Signatures of versions other than v1 are
     * ignored, as Standard Webhooks says.
     *
     * @param array<string, string|list<string>> $headers
     * @throws WebhookException the request is refused
     * @throws \InvalidArgumentException $secret is not a secret, or $tolerance is negative
     */
    public static function verify(string $secret, array $headers, string $body, int $tolerance = self::TOLERANCE, ?int $now = null): void
    {
        $keys = self::keys($secret);
        if ($tolerance < 0) {
            throw new \InvalidArgumentException("gmq webhook: the tolerance is a number of seconds, 0 or more, not $tolerance");
        }
        $fields = self::fields($headers);
        $id = self::header($fields, 'webhook-id');
        $stamp = self::header($fields, 'webhook-timestamp');
        $signatures = self::header($fields, 'webhook-signature');
        if (preg_match('/\A[0-9]{1,18}\z/', $stamp) !== 1) {
            throw new WebhookException("gmq webhook: webhook-timestamp \"$stamp\" is not a whole number of seconds");
        }
        $off = ($now ?? time()) - (int) $stamp;
        // Both ways: a timestamp ahead of now would stretch a replay's window.
        if ($off > $tolerance || $off < -$tolerance) {
            throw new WebhookException("gmq webhook: its timestamp $stamp is $off s from now, past the tolerance of $tolerance s");
        }
        $want = [];
        foreach ($keys as $key) {
            $want[] = base64_encode(hash_hmac('sha256', "$id.$stamp.$body", $key, true));
        }
        // Every pair is compared, each in constant time: how long it takes
        // says nothing of how much of a signature was right.
        $matched = false;
        foreach (preg_split('/\s+/', $signatures, -1, PREG_SPLIT_NO_EMPTY) as $field) {
            // A signature header sent twice comes joined with ", " in $_SERVER.
            $parts = explode(',', rtrim($field, ','), 2);
            if (count($parts) !== 2 || $parts[0] !== 'v1') {
                continue;
            }
            foreach ($want as $w) {
                if (hash_equals($w, $parts[1])) {
                    $matched = true;
                }
            }
        }
        if (!$matched) {
            throw new WebhookException('gmq webhook: no v1 signature matches the secret');
        }
    }

    /**
     * $secret's keys: the decoded bytes after "whsec_", never the text.
     *
     * @return list<string>
     */
    private static function keys(string $secret): array
    {
        $keys = [];
        foreach (preg_split('/\s+/', $secret, -1, PREG_SPLIT_NO_EMPTY) as $i => $s) {
            $n = $i + 1;
            if (!str_starts_with($s, self::PREFIX)) {
                throw new \InvalidArgumentException("gmq webhook: secret $n does not start with \"whsec_\": give the topic's deliver_secret as it is, whsec_ followed by base64");
            }
            $encoded = substr($s, strlen(self::PREFIX));
            // The standard alphabet with its padding, as the broker sends it
            // (base64_decode alone takes a missing padding).
            $key = preg_match('~\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\z~', $encoded) === 1
                ? base64_decode($encoded, true) : false;
            if ($key === false || $key === '') {
                throw new \InvalidArgumentException("gmq webhook: secret $n is not whsec_ followed by the standard base64 (with padding) of its key");
            }
            $keys[] = $key;
        }
        if ($keys === []) {
            throw new \InvalidArgumentException("gmq webhook: no secret: give the topic's deliver_secret (whsec_...), or two space-separated while rotating");
        }
        return $keys;
    }

    /**
     * $headers' values by lower-case name with dashes: 'Webhook-Id',
     * 'webhook-id' and $_SERVER's 'HTTP_WEBHOOK_ID' are all 'webhook-id'.
     *
     * @param array<mixed> $headers
     * @return array<string, list<string>>
     */
    private static function fields(array $headers): array
    {
        $fields = [];
        foreach ($headers as $name => $value) {
            $name = strtolower((string) $name);
            if (str_starts_with($name, 'http_')) {
                $name = substr($name, 5);
            }
            $name = str_replace('_', '-', $name);
            foreach (is_array($value) ? $value : [$value] as $v) {
                if (is_string($v) || is_int($v)) {
                    $fields[$name][] = (string) $v;
                }
            }
        }
        return $fields;
    }

    /** @param array<string, list<string>> $fields */
    private static function header(array $fields, string $name): string
    {
        $value = trim(implode(' ', $fields[$name] ?? []));
        if ($value === '') {
            throw new WebhookException("gmq webhook: no $name header");
        }
        return $value;
    }
}
