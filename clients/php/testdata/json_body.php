<?php
// JSON bodies through the PHP client: argv = base URL, topic. An array or
// object is pushed as JSON and pops back as arrays (json_decode(..., true));
// a string stays a string, even one holding JSON; a number is refused.
require 'vendor/autoload.php';

$c = new Gmq\Client($argv[1]);
$topic = $argv[2];
$mail = ['to' => 'ada', 'tags' => ['new'], 'n' => 1.5, 'ok' => true, 'none' => null, 'name' => 'Zoë'];
$bodies = [
    [$mail, $mail],
    [[1, 'two', ['x' => 1]], [1, 'two', ['x' => 1]]],  // a list: a JSON array
    [(object) ['kind' => 'object'], ['kind' => 'object']],
    ['{"to":"ada"}', '{"to":"ada"}'],                   // a string holding JSON stays a string
    ['plain', 'plain'],
];
foreach ($bodies as [$push, $_]) {
    $c->push($topic, $push);
}
$c->pushBatch([['topic' => $topic, 'body' => ['batch' => 1]], ['topic' => $topic, 'body' => '[1]']]);
foreach ($bodies as [$push, $want]) {
    $job = $c->pop([$topic], 1);
    ($job !== null && $job['body'] === $want) or exit('pop: ' . json_encode($job) . ', want ' . json_encode($want) . "\n");
    $c->ack($job['id'], $job['attempt']);
}
$jobs = $c->popMany([$topic], 5, 1);
(array_column($jobs, 'body') === [['batch' => 1], '[1]']) or exit('popMany: ' . json_encode($jobs) . "\n");
$c->ackMany($jobs);

// A waiting job's body changed to JSON, and back to a string.
$id = $c->push($topic, 'draft', delay: 3600);
$job = $c->update($id, body: ['final' => true]);
($job['body'] === ['final' => true]) or exit('update to JSON: ' . json_encode($job) . "\n");
$job = $c->update($id, delay: 0, body: '{"final":true}');
($job['body'] === '{"final":true}') or exit('update to a string: ' . json_encode($job) . "\n");

// A number as the body is refused by gmq, saying what a body may be.
try {
    $c->pushBatch([['topic' => $topic, 'body' => 42]]);
    exit("a number was stored\n");
} catch (Gmq\GmqException $e) {
    ($e->status === 400 && str_contains($e->getMessage(), 'body must be a string, an object or an array')) or exit("refused: {$e->getMessage()}\n");
}
echo "ok\n";
