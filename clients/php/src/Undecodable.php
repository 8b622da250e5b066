<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal Reads an answer of gmq's that json_decode refuses because a job
 * in it holds a lone UTF-16 surrogate escape ("\ud800" not followed by
 * "\udc00"-"\udfff"): JSON allows it, PHP cannot hold it. gmq refuses such
 * values since issue 49, but a job stored before (or by a broker that did
 * not) still pops with one, and a worker that only threw would leave it
 * reserved until its TTR, again and again. So too for objects and arrays
 * nested past json_decode's depth (512): gmq refuses more than 64 since
 * issue 49, but a job stored before (a webhook's answer kept as a
 * follow-up's body) may hold them.
 *
 * Each lone surrogate is read as U+FFFD followed by a marker of this call,
 * and each object or array opening past DEEPEST as a string of another
 * marker; each job (the answer itself when it has an 'id' and a 'token', or
 * an item of its 'jobs') that holds a marker then comes back with 'body'
 * null and 'decode_error' saying why, so that its caller (the worker) fails
 * it; marks elsewhere are taken out, leaving U+FFFD (or "" for a value too
 * deep).
 */
final class Undecodable
{
    /** How deep a value may open before it is read as a marker: gmq's answers nest a few levels around bodies of at most 64. */
    private const DEEPEST = 128;

    /** The answer decoded, with its undecodable jobs marked; null when it is not JSON even so. */
    public static function decode(string $text): ?array
    {
        [$mark, $deep] = [bin2hex(random_bytes(8)), bin2hex(random_bytes(8))];
        $fixed = preg_replace_callback('/"(?:[^"\\\\]|\\\\.)*+"/s', static function (array $m) use ($mark): string {
            // Escapes left to right: a pair stays, a lone half becomes U+FFFD and the mark.
            return preg_replace_callback('/\\\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2}|u([dD][89a-fA-F][0-9a-fA-F]{2})|.)/s',
                static fn (array $e): string => isset($e[1]) && $e[1] !== '' ? '\\ufffd' . $mark : $e[0], $m[0]);
        }, $text);
        $fixed = is_string($fixed) ? self::cutDeep($fixed, $deep) : null;
        $answer = is_string($fixed) ? json_decode($fixed, true) : null;
        if (!is_array($answer)) {
            return null;
        }
        $errors = [
            [$mark, 'gmq: cannot decode the job: Single unpaired UTF-16 surrogate in unicode escape (a lone surrogate '
                . 'escape PHP cannot hold; gmq refuses them since issue 49, so the job was stored before)'],
            [$deep, 'gmq: cannot decode the job: Maximum stack depth exceeded (objects and arrays nested past what '
                . 'json_decode reads; gmq refuses more than 64 deep since issue 49, so the job was stored before)'],
        ];
        $flag = static function (array $job) use ($mark, $deep, $errors): array {
            foreach ($errors as [$m, $error]) {
                if (self::holds($job, $m)) {
                    return ['body' => null, 'decode_error' => $error] + self::strip(self::strip($job, $mark), $deep);
                }
            }
            return $job;
        };
        if (isset($answer['id'], $answer['token'])) {
            $answer = $flag($answer);
        }
        if (isset($answer['jobs']) && is_array($answer['jobs'])) {
            $answer['jobs'] = array_map(static fn ($job) => is_array($job) ? $flag($job) : $job, $answer['jobs']);
        }
        return self::strip(self::strip($answer, $mark), $deep);
    }

    /**
     * $text (JSON) with each object or array that opens past DEEPEST
     * replaced by the string $deep; null when preg fails.
     */
    private static function cutDeep(string $text, string $deep): ?string
    {
        if (preg_match_all('/"[^"\\\\]*+(?:\\\\.[^"\\\\]*+)*+"|[][{}]/s', $text, $m, PREG_OFFSET_CAPTURE) === false) {
            return null;
        }
        [$out, $depth, $start, $cut] = ['', 0, 0, 0];
        foreach ($m[0] as [$token, $at]) {
            if ($token === '[' || $token === '{') {
                if (++$depth === self::DEEPEST + 1) {
                    $cut = $at;
                }
            } elseif ($token === ']' || $token === '}') {
                if ($depth-- === self::DEEPEST + 1) {
                    $out .= substr($text, $start, $cut - $start) . '"' . $deep . '"';
                    $start = $at + 1;
                }
            }
        }
        return $out . substr($text, $start);
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
