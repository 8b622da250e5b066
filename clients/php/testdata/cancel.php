<?php
// Progress, cancel and waiting for the end through the PHP client: argv =
// base URL, topic. progress reports a value and a log line, which job()
// shows; another delivery's is a 409. cancel ends a waiting job at once
// (kept, or removed), and an ended one is a 409; a reserved one answers
// its consumer's next call with a JobCancelled. waitEnd says null when
// nothing ends in time, and is answered when another process acks the job
// with a result; pushAndWait brings a worker's result back in the push's
// request, or the id when none came in time. Prints "ok".
require 'vendor/autoload.php';

use Gmq\GmqException;
use Gmq\JobCancelled;

[$base, $topic] = array_slice($argv, 1);
$c = new Gmq\Client($base);

function check(bool $ok, string $what, $got = null): void
{
    $ok or exit("$what: " . json_encode($got) . "\n");
}

// api is a call the client has no method for (a topic's config, the stats).
function api(string $base, string $method, string $path, ?array $payload = null): array
{
    $http = ['method' => $method, 'header' => 'Content-Type: application/json', 'ignore_errors' => true];
    if ($payload !== null) {
        $http['content'] = json_encode($payload);
    }
    $answer = file_get_contents($base . $path, false, stream_context_create(['http' => $http]));
    check(str_contains($http_response_header[0] ?? '', ' 200 '), "$method $path", $answer);
    return json_decode($answer, true);
}

// thrown runs $call and returns what it threw (null: nothing).
function thrown(callable $call): ?Throwable
{
    try {
        $call();
        return null;
    } catch (Throwable $e) {
        return $e;
    }
}

// eventually waits up to 10 s for $ok() to be true.
function eventually(string $what, callable $ok): void
{
    for ($deadline = microtime(true) + 10; !$ok(); usleep(20_000)) {
        check(microtime(true) < $deadline, "not within 10 s: $what");
    }
}

// background runs $work in a child process; returns its pid.
function background(callable $work): int
{
    $pid = pcntl_fork();
    check($pid !== -1, 'fork');
    if ($pid === 0) {
        $work();
        exit(0);
    }
    return $pid;
}

// reaped waits for a child of background() and requires its exit status 0.
function reaped(int $pid): void
{
    pcntl_waitpid($pid, $status);
    check(pcntl_wifexited($status) && pcntl_wexitstatus($status) === 0, "child $pid", $status);
}

api($base, 'PUT', "/api/v1/topics/$topic/config", ['keep_completed' => 3600]);

// progress and a log line, read back.
$c->push($topic, 'x', ttr: 30, id: 'export-1');
$job = $c->pop([$topic], 1);
$c->progress($job['id'], $job['attempt'], ['rows' => 4000, 'of' => 12000], 'page 1 of 3', $job['token']);
$got = $c->progress($job['id'], $job['attempt'], log: 'page 2 of 3', token: $job['token']); // a line alone: the progress stays
check($got['progress'] === ['rows' => 4000, 'of' => 12000], 'the progress', $got);
check(array_column($got['log'], 'line') === ['page 1 of 3', 'page 2 of 3'] && $got['log'][0]['at'] !== '', 'the log', $got);
$e = thrown(fn () => $c->progress($job['id'], $job['attempt'] + 1, 1));
check($e instanceof GmqException && $e->status === 409, "another delivery's progress", $e?->getMessage());

// cancel of the reserved job: marked, and its next call answers a JobCancelled.
$got = $c->cancel('export-1');
check($got['state'] === 'reserved' && $got['cancelling'] === true, 'cancel a reserved job', $got);
$e = thrown(fn () => $c->progress($job['id'], $job['attempt'], log: 'page 3 of 3', token: $job['token']));
check($e instanceof JobCancelled && $e->status === 410, 'progress of a cancelled job', $e?->getMessage());
$got = $c->job('export-1');
check($got['state'] === 'cancelled' && ($got['cancelled_at'] ?? '') !== '' && count($got['log']) === 2, 'the cancelled job', $got);

// cancel of waiting jobs: at once, kept or removed; again: 409, 404.
$c->push($topic, 'x', delay: 3600, id: 'waiting');
$got = $c->cancel('waiting');
check($got['state'] === 'cancelled' && ($got['cancelled_at'] ?? '') !== '', 'cancel a delayed job', $got);
$c->push("$topic-plain", 'x', id: 'plain');
check($c->cancel('plain') === ['id' => 'plain', 'state' => 'cancelled'], 'cancel a job not kept');
foreach (['waiting' => 409, 'plain' => 404] as $id => $status) {
    $e = thrown(fn () => $c->cancel($id));
    check($e instanceof GmqException && $e->status === $status, "cancel $id again", $e?->getMessage());
}

// waitEnd: null when nothing ends in time; answered when another process
// acks the job with a result.
$c->push($topic, 'x', id: 'label-1');
check($c->waitEnd('label-1', 0.2) === null, 'a wait for a job nobody takes');
$acker = background(function () use ($base, $c, $topic): void {
    eventually('the wait under way', fn () => api($base, 'GET', '/api/v1/stats')['current_end_waits'] === 1);
    $job = $c->pop([$topic], 5);
    $c->ack($job['id'], $job['attempt'], $job['token'], 'printed');
});
$end = $c->waitEnd('label-1', 30);
reaped($acker);
check($end !== null && $end['state'] === 'completed' && $end['result'] === 'printed', 'the end', $end);
$e = thrown(fn () => $c->waitEnd('no-such-job'));
check($e instanceof GmqException && $e->status === 404, 'a wait for an unknown job', $e?->getMessage());

// pushAndWait: a worker's result in the push's own request; with no
// worker, the id after the wait.
$worker = background(function () use ($c, $topic): void {
    $c->worker(["$topic-quotes"], fn (array $job) => ['price' => 42, 'for' => $job['body']], wait: 1, maxJobs: 1)->run();
});
$got = $c->pushAndWait("$topic-quotes", 'ada', 20, keepCompleted: 600);
reaped($worker);
check($got['end'] !== null && $got['end']['id'] === $got['id'] && $got['end']['state'] === 'completed'
    && $got['end']['result'] === ['price' => 42, 'for' => 'ada'], 'pushAndWait', $got);
check($c->pushAndWait("$topic-quotes", 'bob', 0.2, id: 'quote-2') === ['id' => 'quote-2', 'end' => null], 'pushAndWait, no worker');
check($c->job('quote-2')['state'] === 'ready', 'the job pushed');
echo "ok\n";
