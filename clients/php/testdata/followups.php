<?php
// Follow-ups through the PHP client: argv = base URL, topic.
// An ack with push answers its follow-ups' ids (ack; ackMany's 'pushed'),
// and each is then popped under its id; without push, ack returns null. A
// bad follow-up (an id of its own, no topic) is a GmqException 400 naming
// it, and the job stays reserved. A worker's handler that returns a
// Gmq\Done acks its job with the result and follow-ups, which the worker
// then works; one whose follow-ups gmq refuses is failed with gmq's
// reason. Prints "ok".
require 'vendor/autoload.php';

use Gmq\Done;
use Gmq\GmqException;

[$base, $topic] = array_slice($argv, 1);
$mails = "$topic-mails";
$c = new Gmq\Client($base);

function check(bool $ok, string $what, $got = null): void
{
    $ok or exit("$what: " . json_encode($got) . "\n");
}

// popped pushes $id to the topic and pops it.
function popped(Gmq\Client $c, string $topic, string $id): array
{
    $c->push($topic, $id, ttr: 30, id: $id);
    $job = $c->pop([$topic], 1);
    check($job !== null && $job['id'] === $id, "pop $id", $job);
    return $job;
}

// popAs pops from $topic and requires job $id with $body.
function popAs(Gmq\Client $c, string $topic, string $id, mixed $body): array
{
    $job = $c->pop([$topic], 5);
    check($job !== null && (string) $job['id'] === $id && $job['body'] === $body, "pop $id from $topic", $job);
    return $job;
}

// gone says whether job $id is no more.
function gone(Gmq\Client $c, string $id): bool
{
    try {
        $c->job($id);
        return false;
    } catch (GmqException $e) {
        check($e->status === 404, "job $id", $e->getMessage());
        return true;
    }
}

// completed says whether job $id is kept, completed with $result (an ack
// with a result keeps its job: keep_results).
function completed(Gmq\Client $c, string $id, mixed $result): bool
{
    $job = $c->job($id);
    return $job['state'] === 'completed' && ($job['result'] ?? null) === $result;
}

// ack with follow-ups: their ids, in push's order; the acked job is kept
// with its result.
$job = popped($c, $topic, 'order-77');
$ids = $c->ack($job['id'], $job['attempt'], $job['token'], result: ['shipped' => true], push: [
    ['topic' => $mails, 'body' => ['order' => 77], 'priority' => 1],
    ['topic' => $mails, 'body' => 'invoice 77', 'priority' => 5],
]);
check(is_array($ids) && count($ids) === 2 && $ids[0] !== $ids[1], 'the follow-ups\' ids', $ids);
check(completed($c, 'order-77', ['shipped' => true]), 'order-77 completed with its result', $c->job('order-77'));
popAs($c, $mails, $ids[0], ['order' => 77]);
popAs($c, $mails, $ids[1], 'invoice 77');

// A plain ack still returns null.
$job = popped($c, $topic, 'order-plain');
check($c->ack($job['id'], $job['attempt'], $job['token']) === null, 'a plain ack returns null');

// A bad follow-up: a GmqException 400 naming it (its index, 1), the job still reserved.
$job = popped($c, $topic, 'order-bad');
foreach ([['topic' => $mails, 'body' => 'x', 'id' => 'mine'], ['body' => 'no topic']] as $bad) {
    try {
        $c->ack($job['id'], $job['attempt'], $job['token'], push: [['topic' => $mails, 'body' => 'fine'], $bad]);
        check(false, 'a bad follow-up was taken', $bad);
    } catch (GmqException $e) {
        check($e->status === 400 && str_contains($e->getMessage(), 'push: job 1:'),
            'a bad follow-up', $e->getMessage());
    }
    check($c->job('order-bad')['state'] === 'reserved', 'order-bad still reserved');
}
check($c->ack($job['id'], $job['attempt'], $job['token'], push: []) === [], 'an empty push: a plain ack');
check(gone($c, 'order-bad') && $c->pop([$mails], 0.2) === null, 'a refused ack pushed nothing');

// ackMany: each job's 'push'; the answer's 'pushed' by acked id.
$c->pushBatch([['topic' => $topic, 'body' => 'x', 'id' => 'many-1'], ['topic' => $topic, 'body' => 'y', 'id' => 'many-2']]);
$jobs = $c->popMany([$topic], 2, 1);
check(array_column($jobs, 'id') === ['many-1', 'many-2'], 'popMany', $jobs);
$answer = $c->ackMany([$jobs[0] + ['push' => [['topic' => $mails, 'body' => 'after many-1']]], $jobs[1]]);
check(count($answer['acked']) === 2 && $answer['failed'] === [] && array_keys($answer['pushed'] ?? []) === ['many-1']
    && count($answer['pushed']['many-1']) === 1, 'ackMany', $answer);
popAs($c, $mails, (string) $answer['pushed']['many-1'][0], 'after many-1');

// The worker: an order ends with a mail (Done), which the worker works too;
// the bad order's follow-up (an id of its own) is refused: it is failed,
// and dies (max_attempts 1).
$c->push($topic, '1', ttr: 30, id: 'w-order-1');
$c->push($topic, 'bad', ttr: 30, id: 'w-order-bad', retry: ['max_attempts' => 1]);
$handled = [];
$log = [];
$worker = $c->worker([$topic, $mails], function (array $job) use (&$worker, &$handled, $topic, $mails): mixed {
    $handled[] = "{$job['topic']}:{$job['body']}";
    if (count($handled) === 3) {
        $worker->stop();
    }
    if ($job['body'] === 'bad') {
        return new Done(push: [['topic' => $mails, 'body' => 'never', 'id' => 'own-id']]);
    }
    if ($job['topic'] === $topic) {
        return new Done(result: 'shipped', push: [['topic' => $mails, 'body' => "mail for {$job['body']}"]]);
    }
    return null;
}, wait: 1, log: function (string $line) use (&$log): void {
    $log[] = $line;
});
$worker->run();
sort($handled);
check($handled === ["$mails:mail for 1", "$topic:1", "$topic:bad"], 'the jobs handled', $handled);
check(completed($c, 'w-order-1', 'shipped'), 'w-order-1 completed with its result', $c->job('w-order-1'));
$bad = $c->job('w-order-bad');
check($bad['state'] === 'dead' && str_contains($bad['last_error'], '400') && str_contains($bad['last_error'], 'id'), 'w-order-bad dead', $bad);
check(count(array_filter($log, fn ($l) => str_contains($l, 'w-order-bad: its follow-ups were refused'))) === 1, "the worker's log", $log);
check($c->pop([$mails], 0.2) === null, 'nothing left in the mails', null);
echo "ok\n";
