<?php
// A worker for the tests: argv = base URL, topic, concurrency, wait, maxJobs.
// A job's body is JSON: {"sleep": s} every attempt, {"first_sleep": s} the
// first attempt only, {"progress": true} reports progress every 50 ms
// until a progress() throws, {"throw": "message"} then throws, {"stop":
// true} calls $worker->stop(). It prints "start <id> <attempt> <pid>", then
// "done <id> <pid> <seconds slept>", or "cancelled <id> <pid>" when a
// JobCancelled stops the handler, and "stopped" when run() returns. With
// GMQ_PUSH_TIMEOUT it first pushes a job of a minute with that timeout of
// its own, and prints "pushed <id>".
require 'vendor/autoload.php';

[$url, $topic, $concurrency, $wait, $max] = array_slice($argv, 1);
$client = new Gmq\Client($url, token: getenv('GMQ_TOKEN') ?: null);
if (($own = getenv('GMQ_PUSH_TIMEOUT')) !== false) { // a job of a minute, with a timeout of its own
    echo 'pushed ' . $client->push($topic, '{"sleep":60}', ttr: 120, timeout: (float) $own) . "\n";
}
$worker = $client->worker([$topic], function (array $job) use (&$worker, $client): void {
    $do = json_decode($job['body'], true) ?: [];
    $pid = getmypid();
    echo "start {$job['id']} {$job['attempt']} $pid\n";
    $sleep = $do['sleep'] ?? ($job['attempt'] === 1 ? ($do['first_sleep'] ?? 0) : 0);
    $start = microtime(true);
    try {
        usleep((int) ($sleep * 1e6));
        for ($step = 1; isset($do['progress']); $step++) {
            $client->progress($job['id'], $job['attempt'], ['step' => $step], "step $step", $job['token']);
            usleep(50_000);
        }
    } catch (Gmq\JobCancelled $e) {
        echo "cancelled {$job['id']} $pid\n";
        throw $e;
    }
    if (isset($do['stop'])) {
        $worker->stop();
    }
    if (isset($do['throw'])) {
        throw new RuntimeException($do['throw']);
    }
    printf("done %s %d %.3f\n", $job['id'], $pid, microtime(true) - $start);
}, concurrency: (int) $concurrency, wait: (float) $wait, maxJobs: (int) $max, timeout: (int) (getenv('GMQ_WORKER_TIMEOUT') ?: 0));
echo "running\n";
$worker->run();
echo "stopped\n";
