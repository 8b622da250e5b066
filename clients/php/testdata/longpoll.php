<?php
// Long polls past the broker's request_timeout through the PHP client:
// argv = base URL, topic, wait (seconds). Every waiting call must come back
// empty after the whole wait, not fail.
require 'vendor/autoload.php';

$c = new Gmq\Client($argv[1]);
$topic = $argv[2];
$wait = (float) $argv[3];

function waited(string $name, callable $call, $empty, float $wait): void
{
    $start = microtime(true);
    $got = $call();
    $took = microtime(true) - $start;
    ($got === $empty) or exit("$name: " . json_encode($got) . "\n");
    ($took >= $wait - 0.05) or exit("$name came back after $took s\n");
}

function held(Gmq\Client $c, string $topic): array
{
    $c->push("$topic-held", 'x');
    return $c->pop(["$topic-held"], 1);
}

waited('pop', fn () => $c->pop([$topic], $wait), null, $wait);
waited('popMany', fn () => $c->popMany([$topic], 3, $wait), [], $wait);
$job = held($c, $topic);
waited('ackAndPop', fn () => $c->ackAndPop($job['id'], $job['attempt'], [$topic], $wait), null, $wait);
$job = held($c, $topic);
waited('ackMany', fn () => $c->ackMany([$job], [$topic], 2, $wait)['jobs'], [], $wait);
echo "ok\n";
