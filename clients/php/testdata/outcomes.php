<?php
// Completed jobs through the PHP client: argv = base URL, topic.
// The topic keeps its acked jobs an hour, completed, with results of at
// most 64 bytes. A worker's handler returns each job's result, which its
// ack carries: job() shows the job completed with it. A result the worker
// cannot send (not JSON) or gmq cannot keep (413) is dropped, the job acked
// without it. The plain acks carry results too (ack, ackAndPop, ackMany); a
// push's keepCompleted overrides its topic's, 0 included. Prints "ok".
require 'vendor/autoload.php';

use Gmq\GmqException;

[$base, $topic] = array_slice($argv, 1);
$c = new Gmq\Client($base);

function check(bool $ok, string $what, $got = null): void
{
    $ok or exit("$what: " . json_encode($got) . "\n");
}

// configure sets a topic's settings (the client has no call for it).
function configure(string $base, string $topic, array $settings): void
{
    $http = ['method' => 'PUT', 'header' => 'Content-Type: application/json', 'content' => json_encode($settings), 'ignore_errors' => true];
    $answer = file_get_contents("$base/api/v1/topics/$topic/config", false, stream_context_create(['http' => $http]));
    check(str_contains($http_response_header[0] ?? '', ' 200 '), "configure $topic", $answer);
}

// completed requires job $id completed, with $result (null: none).
function completed(Gmq\Client $c, string $id, mixed $result): array
{
    $job = $c->job($id);
    check($job['state'] === 'completed' && ($job['completed_at'] ?? '') !== '' && ($job['result'] ?? null) === $result
        && ($result !== null || !array_key_exists('result', $job)), "$id completed with " . json_encode($result), $job);
    return $job;
}

// popped pushes $id to the topic and pops it.
function popped(Gmq\Client $c, string $topic, string $id): array
{
    $c->push($topic, 'x', ttr: 30, id: $id);
    $job = $c->pop([$topic], 1);
    check($job !== null && $job['id'] === $id, "pop $id", $job);
    return $job;
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

configure($base, $topic, ['keep_completed' => 3600, 'max_result' => 64]);

// The worker: the handler's return is the result, null none.
$ids = ['report-1', 'report-2', 'report-none', 'report-big', 'report-nan', 'report-void'];
foreach ($ids as $id) {
    $c->push($topic, $id, ttr: 30, id: $id);
}
$log = [];
$done = 0;
$worker = $c->worker([$topic], function (array $job) use (&$worker, &$done, $ids): mixed {
    if (++$done === count($ids)) {
        $worker->stop();
    }
    return match ($job['id']) {
        'report-none' => null,
        'report-big' => str_repeat('x', 100), // over max_result
        'report-nan' => NAN, // not JSON
        'report-void' => (function (): void {})(),
        default => ['url' => "/r/{$job['id']}.pdf", 'pages' => 7],
    };
}, wait: 1, log: function (string $line) use (&$log): void {
    $log[] = $line;
});
$worker->run();
check($done === count($ids), 'jobs done', $done);
foreach (['report-1', 'report-2'] as $id) {
    completed($c, $id, ['url' => "/r/$id.pdf", 'pages' => 7]);
}
foreach (['report-none', 'report-big', 'report-nan', 'report-void'] as $id) {
    completed($c, $id, null);
}
check(count($log) === 2 && str_contains($log[0], 'report-big: its result is too big to keep')
    && str_contains($log[1], 'report-nan: its result is not JSON'), "the worker's log", $log);

// ack with a result.
$job = popped($c, $topic, 'ack-1');
$c->ack($job['id'], $job['attempt'], $job['token'], ['one', 2, null]);
completed($c, 'ack-1', ['one', 2, null]);

// A result gmq cannot keep is a 413, the job still reserved; one that is
// not JSON is thrown before any request.
$job = popped($c, $topic, 'ack-2');
$e = thrown(fn () => $c->ack($job['id'], $job['attempt'], $job['token'], str_repeat('x', 100)));
check($e instanceof GmqException && $e->status === 413, 'a result over max_result', $e?->getMessage());
$e = thrown(fn () => $c->ack($job['id'], $job['attempt'], $job['token'], INF));
check($e instanceof JsonException, 'a result that is not JSON', $e?->getMessage());
check($c->job('ack-2')['state'] === 'reserved', 'ack-2 still reserved');
check($c->ackAndPop($job['id'], $job['attempt'], [$topic], 0, $job['token'], 0) === null, 'ackAndPop with a result');
completed($c, 'ack-2', 0);

// ackMany: each job's 'result', when it has one.
$c->pushBatch([['topic' => $topic, 'body' => 'x', 'id' => 'many-1'], ['topic' => $topic, 'body' => 'y', 'id' => 'many-2']]);
$jobs = $c->popMany([$topic], 2, 1);
check(array_column($jobs, 'id') === ['many-1', 'many-2'], 'popMany', $jobs);
$answer = $c->ackMany([$jobs[0] + ['result' => 'first'], $jobs[1]]);
check(count($answer['acked']) === 2 && $answer['failed'] === [], 'ackMany', $answer);
completed($c, 'many-1', 'first');
completed($c, 'many-2', null);

// A push's keepCompleted: kept where its topic keeps none, and not kept (0)
// where its topic keeps an hour; job() shows a job's own.
$c->push("$topic-plain", 'x', id: 'mine', keepCompleted: 600);
$c->pushBatch([['topic' => "$topic-plain", 'body' => 'y', 'id' => 'batch-mine', 'keep_completed' => 60]]);
$c->push($topic, 'x', id: 'none', keepCompleted: 0);
check($c->job('mine')['keep_completed'] == 600 && $c->job('batch-mine')['keep_completed'] == 60, 'keep_completed shown');
check(!array_key_exists('keep_completed', $c->job('ack-1')), 'no keep_completed of its own');
foreach (["$topic-plain", "$topic-plain", $topic] as $t) {
    $job = $c->pop([$t], 1);
    check($job !== null, "pop $t");
    $c->ack($job['id'], $job['attempt'], $job['token'], 'done');
}
completed($c, 'mine', 'done');
completed($c, 'batch-mine', 'done');
foreach (['none', 'no-such-job'] as $id) {
    $e = thrown(fn () => $c->job($id));
    check($e instanceof GmqException && $e->status === 404, "$id kept", $e?->getMessage());
}
echo "ok\n";
