<?php
// Batch pop and batch ack through the PHP client: argv = base URL, topic.
require 'vendor/autoload.php';

$c = new Gmq\Client($argv[1]);
$topic = $argv[2];
$c->pushBatch(array_map(fn ($i) => ['topic' => $topic, 'body' => (string) $i], range(0, 4)));
$jobs = $c->popMany([$topic], 3, 1);
(array_column($jobs, 'body') === ['0', '1', '2']) or exit("pop 3: " . json_encode($jobs) . "\n");
$stale = ['id' => $jobs[2]['id'], 'attempt' => 9]; // an older (here: unknown) delivery, by attempt alone
$answer = $c->ackMany([$jobs[0], $jobs[1], $stale], [$topic], 10, 1);
(count($answer['acked']) === 2 && $answer['failed'][0]['status'] === 409) or exit("ack 3: " . json_encode($answer) . "\n");
(array_column($answer['jobs'], 'body') === ['3', '4']) or exit("next: " . json_encode($answer) . "\n");
$answer = $c->ackMany(array_merge($answer['jobs'], [$jobs[2]]));
(count($answer['acked']) === 3 && $answer['failed'] === []) or exit("ack the rest: " . json_encode($answer) . "\n");
($c->popMany([$topic], 3, 0.1) === []) or exit("pop of an empty topic\n");

// Failures: a job's own policy of two attempts; fail, then failMany to dead.
$c->push($topic, 'flaky', retry: ['max_attempts' => 2, 'backoff' => 'fixed', 'base' => 0.01]);
$job = $c->pop([$topic], 1);
($c->fail($job['id'], $job['attempt'], 'boom')['state'] === 'delayed') or exit("fail\n");
$job = $c->pop([$topic], 2);
$answer = $c->failMany([$job, ['id' => 'nobody']], 'boom again');
($answer['jobs'][0]['state'] === 'dead' && $answer['failed'][0]['status'] === 404) or exit("failMany: " . json_encode($answer) . "\n");

// A waiting job changed in place: ready now, first, its new body; a reserved one is refused.
$id = $c->push($topic, 'draft', delay: 3600, priority: 10);
$job = $c->update($id, delay: 0, priority: 1, body: 'final');
($job['state'] === 'ready' && $job['priority'] === 1 && $job['body'] === 'final') or exit("update: " . json_encode($job) . "\n");
$job = $c->pop([$topic], 1);
($job['id'] === $id && $job['body'] === 'final') or exit("pop after update: " . json_encode($job) . "\n");
try {
    $c->update($id, priority: 5);
    exit("a reserved job was changed\n");
} catch (Gmq\GmqException $e) {
    ($e->status === 409) or exit("update of a reserved job: " . $e->getMessage() . "\n");
}
echo "ok\n";
