<?php
// Unique pushes through the PHP client: argv = base URL, topic. Prints "ok".
require 'vendor/autoload.php';

use Gmq\GmqException;

$c = new Gmq\Client($argv[1]);
$topic = $argv[2];

function check(bool $ok, string $what, $got = null): void
{
    $ok or exit("$what: " . json_encode($got) . "\n");
}

// The key taken: the push's answer; a second push with it (reject) is a 409 naming the holder.
$first = $c->push($topic, 'hi', id: 'welcome-42', unique: ['key' => 'user-42', 'for' => 600]);
check($first['id'] === 'welcome-42' && $first['internal_id'] > 0 && !isset($first['unique']), 'first push', $first);
try {
    $c->push($topic, 'hi again', unique: ['key' => 'user-42', 'for' => 600, 'mode' => 'reject']);
    exit("a held key was pushed\n");
} catch (GmqException $e) {
    check($e->status === 409 && $e->heldBy === 'welcome-42', 'held key', [$e->getMessage(), $e->heldBy]);
}

// Replace and debounce change the waiting job that holds the key, and name it.
$daily = ['key' => 'daily', 'for' => 600, 'mode' => 'replace'];
$report = $c->push("$topic-reports", 'v1', delay: 3600, unique: $daily);
$again = $c->push("$topic-reports", 'v2', id: 'not-used', unique: $daily);
check($again['id'] === $report['id'] && $again['unique'] === 'replaced', 'replace', $again);
$job = $c->pop(["$topic-reports"], 1);
check($job !== null && $job['id'] === $report['id'] && $job['body'] === 'v2', 'the replaced job', $job);
$debounce = ['key' => 'index', 'for' => 60, 'mode' => 'debounce'];
$index = $c->push("$topic-index", 'x', delay: 5, unique: $debounce);
$moved = $c->push("$topic-index", 'x', delay: 5, unique: $debounce);
check($moved === ['id' => $index['id'], 'internal_id' => $index['internal_id'], 'unique' => 'debounced'], 'debounce', $moved);

// A reserved holder is not changed: a fresh job takes the key.
$fresh = $c->push("$topic-reports", 'v3', unique: $daily);
check($fresh['id'] !== $report['id'] && !isset($fresh['unique']), 'replace of a reserved job', $fresh);

// Bad input is a 400 that says what is wrong; a batch may not repeat a key.
foreach ([[['key' => 'k'], 'for is missing'], [['key' => 'k', 'for' => 60, 'mode' => 'sometimes'], 'reject, replace or debounce']] as [$bad, $says]) {
    try {
        $c->push($topic, 'x', unique: $bad);
        exit('pushed with ' . json_encode($bad) . "\n");
    } catch (GmqException $e) {
        check($e->status === 400 && str_contains($e->getMessage(), $says) && $e->heldBy === null, 'bad unique', $e->getMessage());
    }
}
try {
    $c->pushBatch(array_map(fn ($b) => ['topic' => $topic, 'body' => $b, 'unique' => ['key' => 'k', 'for' => 60]], ['a', 'b']));
    exit("a batch repeating a key was pushed\n");
} catch (GmqException $e) {
    check($e->status === 400, 'batch repeating a key', $e->getMessage());
}
echo "ok\n";
