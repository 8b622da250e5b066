<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal Reads an answer of gmq's that json_decode refuses because a job
 * in it holds a lone UTF-16 surrogate escape ("\ud800" not followed by
 * "\udc00"-"\udfff"): JSON allows it, PHP cannot hold it. gmq refuses such
 * values since issue 49, but a job stored before (or by a broker that did
 * not) still pops with one, and a worker that only threw would leave it
 * reserved until its TTR, again and again.
 *
 * Each lone surrogate is read as U+FFFD followed by a marker of this call;
 * each job (the answer itself when it has an 'id' and a 'token', or an
 * item of its 'jobs') that holds a marker then comes back with 'body' null
 * and 'decode_error' saying why, so that its caller (the worker) fails it;
 * marks elsewhere are taken out, leaving U+FFFD.
 */
final class Undecodable
{
    /** The answer decoded, with its undecodable jobs marked; null when it is not JSON even so. */
    public static function decode(string $text, string $why): ?array
    {
        $mark = bin2hex(random_bytes(8));
        $fixed = preg_replace_callback('/"(?:[^"\\\\]|\\\\.)*+"/s', static function (array $m) use ($mark): string {
            // Escapes left to right: a pair stays, a lone half becomes U+FFFD and the mark.
            return preg_replace_callback('/\\\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2}|u([dD][89a-fA-F][0-9a-fA-F]{2})|.)/s',
                static fn (array $e): string => isset($e[1]) && $e[1] !== '' ? '\\ufffd' . $mark : $e[0], $m[0]);
        }, $text);
        $answer = is_string($fixed) ? json_decode($fixed, true) : null;
        if (!is_array($answer)) {
            return null;
        }
        $error = "gmq: cannot decode the job: $why (a lone surrogate escape PHP cannot hold; "
            . 'gmq refuses them since issue 49, so the job was stored before)';
        $flag = static function (array $job) use ($mark, $error): array {
            if (!self::holds($job, $mark)) {
                return $job;
            }
            return ['body' => null, 'decode_error' => $error] + self::strip($job, $mark);
        };
        if (isset($answer['id'], $answer['token'])) {
            $answer = $flag($answer);
        }
        if (isset($answer['jobs']) && is_array($answer['jobs'])) {
            $answer['jobs'] = array_map(static fn ($job) => is_array($job) ? $flag($job) : $job, $answer['jobs']);
        }
        return self::strip($answer, $mark);
    }

    private static function holds(mixed $value, string $mark): bool
    {
        if (is_string($value)) {
            return str_contains($value, $mark);
        }
        if (is_array($value)) {
            foreach ($value as $key => $item) {
                if (self::holds($key, $mark) || self::holds($item, $mark)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static function strip(mixed $value, string $mark): mixed
    {
        if (is_string($value)) {
            return str_replace($mark, '', $value);
        }
        if (!is_array($value)) {
            return $value;
        }
        $out = [];
        foreach ($value as $key => $item) {
            $out[is_string($key) ? str_replace($mark, '', $key) : $key] = self::strip($item, $mark);
        }
        return $out;
    }
}
