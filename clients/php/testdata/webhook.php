<?php
// Webhook signatures (HTTP push delivery) through the PHP client, no broker:
// Gmq\Webhook::verify on the Standard Webhooks spec's vector and on what gmq
// sends (rotation, the tolerance's bounds, tampering, bad secrets, missing
// headers, other versions, names in any case, getallheaders()'s, $_SERVER's
// and PSR-7's forms). Prints "ok".
require 'vendor/autoload.php';

use Gmq\Webhook;
use Gmq\WebhookException;

function check(bool $ok, string $what, $got = null): void
{
    $ok or exit("$what: " . json_encode($got) . "\n");
}

// The spec's own example: passing it, a receiver checks what any Standard
// Webhooks sender signs.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const STAMP = '1614265330';
const BODY = '{"test": 2432232314}';
const SIG = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
const NOW = 1614265330;
define('OTHER', 'whsec_' . base64_encode('second-key-of-32-bytes----------'));

/** What gmq sends: a v1 signature per key, space-separated (written here again, from the spec). */
function sign(string $secret, string $id, string $stamp, string $body): string
{
    $sigs = [];
    foreach (explode(' ', $secret) as $s) {
        $key = base64_decode(substr($s, strlen('whsec_')));
        $sigs[] = 'v1,' . base64_encode(hash_hmac('sha256', "$id.$stamp.$body", $key, true));
    }
    return implode(' ', $sigs);
}

check(sign(SECRET, ID, STAMP, BODY) === SIG, 'the spec vector', sign(SECRET, ID, STAMP, BODY));
$rotated = sign(SECRET . ' ' . OTHER, ID, STAMP, BODY);
$otherOnly = sign(OTHER, ID, STAMP, BODY);
$v2 = 'v2,' . substr(SIG, 3); // the right bytes under another version: ignored

/** The spec's delivery's headers as getallheaders() gives them, with $changes (null: left out). */
function headers(array $changes = []): array
{
    $h = ['Webhook-Id' => ID, 'Webhook-Timestamp' => STAMP, 'Webhook-Signature' => SIG];
    foreach ($changes as $name => $value) {
        if ($value === null) {
            unset($h[$name]);
        } else {
            $h[$name] = $value;
        }
    }
    return $h;
}

/** The same as $_SERVER holds them. */
function server(array $h): array
{
    $s = ['REQUEST_METHOD' => 'POST', 'CONTENT_TYPE' => 'application/json'];
    foreach ($h as $name => $value) {
        $s['HTTP_' . strtoupper(str_replace('-', '_', $name))] = $value;
    }
    return $s;
}

[$pass, $refused, $badSecret] = ['pass', 'refused', 'bad secret'];
$cases = [
    ["the spec's vector", SECRET, headers(), BODY, NOW, $pass],
    // Rotation: signed with both keys, checked with either; checked with
    // both, signed with either.
    ['signed with two, checked with the first', SECRET, headers(['Webhook-Signature' => $rotated]), BODY, NOW, $pass],
    ['signed with two, checked with the second', OTHER, headers(['Webhook-Signature' => $rotated]), BODY, NOW, $pass],
    ['signed with the old, checked with both', OTHER . ' ' . SECRET, headers(), BODY, NOW, $pass],
    ['signed with the new, checked with both', SECRET . '  ' . OTHER, headers(['Webhook-Signature' => $otherOnly]), BODY, NOW, $pass],
    ['signed with another key only', SECRET, headers(['Webhook-Signature' => $otherOnly]), BODY, NOW, $refused],
    // The tolerance: 300 s either way passes, 301 s does not.
    ['300 s old', SECRET, headers(), BODY, NOW + 300, $pass],
    ['301 s old', SECRET, headers(), BODY, NOW + 301, $refused],
    ['300 s ahead', SECRET, headers(), BODY, NOW - 300, $pass],
    ['301 s ahead', SECRET, headers(), BODY, NOW - 301, $refused],
    // What is signed: the body's bytes, the id, the timestamp.
    ['a body changed', SECRET, headers(), '{"test": 2432232315}', NOW, $refused],
    ['a body re-encoded', SECRET, headers(), '{"test":2432232314}', NOW, $refused],
    ['an id changed', SECRET, headers(['Webhook-Id' => ID . 'x']), BODY, NOW, $refused],
    ['a timestamp changed', SECRET, headers(['Webhook-Timestamp' => '1614265331']), BODY, NOW, $refused],
    ['a signature changed', SECRET, headers(['Webhook-Signature' => str_replace('g0h', 'g0i', SIG)]), BODY, NOW, $refused],
    ['a signature without its version', SECRET, headers(['Webhook-Signature' => substr(SIG, 3)]), BODY, NOW, $refused],
    ['a timestamp with a fraction', SECRET, headers(['Webhook-Timestamp' => STAMP . '.0']), BODY, NOW, $refused],
    ['a timestamp with a sign', SECRET, headers(['Webhook-Timestamp' => '+' . STAMP]), BODY, NOW, $refused],
    ['a timestamp in words', SECRET, headers(['Webhook-Timestamp' => 'now']), BODY, NOW, $refused],
    ['a timestamp with a newline', SECRET, headers(['Webhook-Timestamp' => STAMP . "\n0"]), BODY, NOW, $refused],
    ['a timestamp past int', SECRET, headers(['Webhook-Timestamp' => '99999999999999999999']), BODY, NOW, $refused],
    ['no webhook-id', SECRET, headers(['Webhook-Id' => null]), BODY, NOW, $refused],
    ['no webhook-timestamp', SECRET, headers(['Webhook-Timestamp' => null]), BODY, NOW, $refused],
    ['no webhook-signature', SECRET, headers(['Webhook-Signature' => null]), BODY, NOW, $refused],
    ['an empty webhook-signature', SECRET, headers(['Webhook-Signature' => '']), BODY, NOW, $refused],
    ['no headers at all', SECRET, [], BODY, NOW, $refused],
    // Versions: only v1 counts; a v2 beside a good v1 is no harm.
    ['only a v2 signature', SECRET, headers(['Webhook-Signature' => $v2]), BODY, NOW, $refused],
    ['a v2 signature then a v1', SECRET, headers(['Webhook-Signature' => "$v2 " . SIG]), BODY, NOW, $pass],
    ['a v1 signature then a v2', SECRET, headers(['Webhook-Signature' => SIG . " $v2"]), BODY, NOW, $pass],
    ['a v1 signature among junk', SECRET, headers(['Webhook-Signature' => 'v1,AAAA v1, , v1a,x ' . SIG]), BODY, NOW, $pass],
    // Header names in any case, and the forms PHP gives them in.
    ['lower-case names', SECRET, array_change_key_case(headers(), CASE_LOWER), BODY, NOW, $pass],
    ['upper-case names', SECRET, array_change_key_case(headers(), CASE_UPPER), BODY, NOW, $pass],
    ["\$_SERVER's form", SECRET, server(headers()), BODY, NOW, $pass],
    ["\$_SERVER's form, tampered", SECRET, server(headers(['Webhook-Id' => 'x'])), BODY, NOW, $refused],
    ["\$_SERVER's form, two signatures joined with a comma", SECRET,
        server(headers(['Webhook-Signature' => "$otherOnly, " . SIG])), BODY, NOW, $pass],
    ["PSR-7's form (lists of values)", SECRET,
        ['Webhook-Id' => [ID], 'Webhook-Timestamp' => [STAMP], 'Webhook-Signature' => [$otherOnly, SIG]], BODY, NOW, $pass],
    // The caller's errors: an \InvalidArgumentException, not a refusal of the request.
    ['a secret without whsec_', substr(SECRET, 6), headers(), BODY, NOW, $badSecret],
    ['a secret not base64', 'whsec_not*base64', headers(), BODY, NOW, $badSecret],
    ['a secret without its padding', rtrim(OTHER, '='), headers(), BODY, NOW, $badSecret],
    ['an empty key', 'whsec_', headers(), BODY, NOW, $badSecret],
    ['no secret', ' ', headers(), BODY, NOW, $badSecret],
    ['a good secret and a bad one', SECRET . ' whsec_!!', headers(), BODY, NOW, $badSecret],
    ['a bad secret and no headers', substr(SECRET, 6), [], BODY, NOW, $badSecret],
];
foreach ($cases as [$name, $secret, $h, $body, $now, $want]) {
    try {
        Webhook::verify($secret, $h, $body, now: $now);
        $got = $pass;
    } catch (WebhookException $e) {
        $got = $refused;
        check(str_starts_with($e->getMessage(), 'gmq webhook: '), "$name: the message", $e->getMessage());
    } catch (InvalidArgumentException $e) {
        $got = $badSecret;
        check(str_contains($e->getMessage(), 'secret'), "$name: the message", $e->getMessage());
    }
    check($got === $want, $name, [$got, $want]);
}

// The tolerance is a parameter: 0 takes only the very second, a negative
// one is the caller's error; the default is the clock's now, by which the
// spec's vector (2021) is long expired.
Webhook::verify(SECRET, headers(), BODY, tolerance: 0, now: NOW);
Webhook::verify(SECRET, headers(), BODY, tolerance: 7200, now: NOW + 3600);
foreach ([[NOW + 1, 0], [NOW + 3601, 3600], [null, 300]] as [$now, $tolerance]) {
    try {
        Webhook::verify(SECRET, headers(), BODY, $tolerance, $now);
        exit("passed at $now with a tolerance of $tolerance\n");
    } catch (WebhookException $e) {
        check(str_contains($e->getMessage(), 'tolerance'), 'the tolerance', $e->getMessage());
    }
}
try {
    Webhook::verify(SECRET, headers(), BODY, -1, NOW);
    exit("a negative tolerance passed\n");
} catch (InvalidArgumentException) {
}
// Signed now, as gmq does, and checked by the clock.
$now = (string) time();
$job = '{"id":"order-7","topic":"orders","body":{"sku":"A1"},"attempt":1}';
Webhook::verify(OTHER, ['webhook-id' => 'order-7', 'webhook-timestamp' => $now, 'webhook-signature' => sign(OTHER, 'order-7', $now, $job)], $job);
check(!is_subclass_of(Gmq\WebhookException::class, Gmq\GmqException::class), 'not an answer from gmq');
echo "ok\n";
