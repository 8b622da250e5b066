<?php
// Pop, work on and ack jobs from gmq, stopping after N jobs or when none came
// for IDLE seconds: php clients/php/consumer.php http://127.0.0.1:8000 mail 10 5
// (GMQ_TOKEN=... in the environment for a broker with a token). A loop
// written out, to show the calls; Gmq\Worker does this and more.
require __DIR__ . '/autoload.php'; // in a Composer project: vendor/autoload.php

[$url, $topic, $n, $idle] = [$argv[1] ?? 'http://127.0.0.1:8000', $argv[2] ?? 'mail', (int)($argv[3] ?? 10), (float)($argv[4] ?? 5)];
$c = new Gmq\Client($url, token: getenv('GMQ_TOKEN') ?: null);
$done = 0;
$job = $c->pop([$topic], $idle);
while ($job !== null) {
    // Long work would touch the job before its TTR runs out; a job that cannot
    // be done now would be released, or buried to look at later.
    $c->touch($job['id'], $job['attempt']);
    $done++;
    if ($done === $n) {
        $c->ack($job['id'], $job['attempt']);
        echo "done {$job['id']}: {$job['body']}\n";
        exit(0);
    }
    // Ack this job and pop the next in one request.
    $next = $c->ackAndPop($job['id'], $job['attempt'], [$topic], $idle);
    echo "done {$job['id']}: {$job['body']}\n";
    $job = $next;
}
echo "no job for {$idle}s\n";
