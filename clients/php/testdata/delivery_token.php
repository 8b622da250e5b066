<?php
// Delivery tokens through the PHP client: argv = base URL, topic.
// A popped job's id is pushed again while its first delivery is still held
// (as after Redis lost its data, when the producer pushes its job again):
// the calls that carry the lost delivery's token reach nothing (404), and
// the new job stays with its consumer. Without the token, an ack reaches it.
require 'vendor/autoload.php';

$base = $argv[1];
$c = new Gmq\Client($base);
$topic = $argv[2];

function raw(string $method, string $url): array
{
    $body = @file_get_contents($url, false, stream_context_create(['http' => ['method' => $method, 'ignore_errors' => true]]));
    preg_match('{^HTTP/\S+ (\d+)}', $http_response_header[0] ?? '', $m);
    return [(int) ($m[1] ?? 0), json_decode((string) $body, true)];
}

// lost pops $id (in a topic of its own), loses it, pushes it again and
// pops the new one: both at attempt 1.
function lost(Gmq\Client $c, string $base, string $id): array
{
    $pop = function () use ($c, $id): array {
        $c->push($id, 'x', ttr: 30, id: $id);
        $job = $c->pop([$id], 1);
        ($job !== null && $job['id'] === $id && $job['attempt'] === 1 && ($job['token'] ?? '') !== '') or exit("pop $id: " . json_encode($job) . "\n");
        return $job;
    };
    $old = $pop();
    raw('DELETE', "$base/api/v1/jobs/$id");
    return [$old, $pop()];
}

function reserved(string $base, string $id): void
{
    [$code, $job] = raw('GET', "$base/api/v1/jobs/$id");
    ($code === 200 && $job['state'] === 'reserved') or exit("$id after a late call: $code " . json_encode($job) . "\n");
}

$calls = [
    'ack' => fn ($j) => $c->ack($j['id'], $j['attempt'], $j['token']),
    'ackAndPop' => fn ($j) => $c->ackAndPop($j['id'], $j['attempt'], ['none'], token: $j['token']),
    'touch' => fn ($j) => $c->touch($j['id'], $j['attempt'], $j['token']),
    'release' => fn ($j) => $c->release($j['id'], $j['attempt'], token: $j['token']),
    'bury' => fn ($j) => $c->bury($j['id'], $j['attempt'], token: $j['token']),
    'fail' => fn ($j) => $c->fail($j['id'], $j['attempt'], 'late', $j['token']),
];
foreach ($calls as $name => $call) {
    [$old, $new] = lost($c, $base, "tok-$name");
    try {
        $call($old);
        exit("$name of a lost delivery went through\n");
    } catch (Gmq\GmqException $e) {
        ($e->status === 404) or exit("$name of a lost delivery: {$e->getMessage()}\n");
    }
    reserved($base, $new['id']);
    $call($new);
}

[$old, $new] = lost($c, $base, 'tok-many');
$answer = $c->ackMany([$old]);
($answer['acked'] === [] && $answer['failed'][0]['status'] === 404) or exit("ackMany: " . json_encode($answer) . "\n");
$answer = $c->failMany([$old], 'late');
($answer['jobs'] === [] && $answer['failed'][0]['status'] === 404) or exit("failMany: " . json_encode($answer) . "\n");
reserved($base, 'tok-many');
// The hazard the token closes: by id and attempt alone the late ack reaches the new job.
$c->ack($old['id'], $old['attempt']);
(raw('GET', "$base/api/v1/jobs/tok-many")[0] === 404) or exit("the new tok-many survived an ack without token\n");

// The worker's ack carries the token: its job is lost while the handler runs.
$c->push($topic, 'old', ttr: 30, id: 'order-42');
$other = new Gmq\Client($base);
$newer = null;
$lines = [];
$worker = $c->worker([$topic], function (array $job) use ($base, $topic, $other, &$newer): void {
    (($job['token'] ?? '') !== '') or exit("a popped job without a token\n");
    raw('DELETE', "$base/api/v1/jobs/order-42");
    $other->push($topic, 'new', ttr: 30, id: 'order-42');
    $newer = $other->pop([$topic], 1);
    ($newer !== null && $newer['attempt'] === 1 && $newer['token'] !== $job['token']) or exit("the other pop: " . json_encode($newer) . "\n");
}, 1, 0.1, 1, function (string $line) use (&$lines): void {
    $lines[] = $line;
});
$worker->run();
(count(preg_grep('{ack of job order-42 failed: .*404}', $lines)) === 1) or exit("the worker's late ack: " . json_encode($lines) . "\n");
reserved($base, 'order-42');
$c->ack($newer['id'], $newer['attempt'], $newer['token']);
echo "ok\n";
