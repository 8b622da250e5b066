<?php
// Workflows through the PHP client: argv = base URL, topic.
// after: a job waits until its dependency is acked, then pops with its
// result kept (withResults: dependency_results); an unknown dependency is a
// 400, a dead one a 409 unless onDependencyFailure is 'run'; pushBatch
// passes the fields through. then and onDead: the follow-up pops after the
// ack (with_result: wrapped with the result), after a fail past
// max_attempts; an ack's push with with_result. Batches: on_complete with
// with_result comes once with the summary, getBatch says done; on_death
// at a death; an open batch takes addToBatch until closeBatch;
// cancelBatch; 404s, 409s and a 400. Prints "ok".
require 'vendor/autoload.php';

use Gmq\GmqException;

[$base, $topic] = array_slice($argv, 1);
$c = new Gmq\Client($base);

function check(bool $ok, string $what, $got = null): void
{
    $ok or exit("$what: " . json_encode($got) . "\n");
}

// popAs pops from $topic within $wait seconds and requires job $id (null: any) with $body.
function popAs(Gmq\Client $c, string $topic, ?string $id, mixed $body, float $wait = 5): array
{
    $job = $c->pop([$topic], $wait);
    check($job !== null && ($id === null || (string) $job['id'] === $id) && $job['body'] === $body, "pop $id from $topic", $job);
    return $job;
}

// refused says the status of the GmqException $call throws (0: none thrown).
function refused(callable $call): int
{
    try {
        $call();
        return 0;
    } catch (GmqException $e) {
        return $e->status;
    }
}

// After: load waits for extract, and keeps its result.
[$extract, $load] = ["$topic-extract", "$topic-load"];
$c->push($extract, 'x', ttr: 30, id: 'extract-1');
check($c->push($load, 'y', ttr: 30, id: 'load-1', after: ['extract-1'], withResults: true) === 'load-1', 'push after');
$view = $c->job('load-1');
check($view['state'] === 'waiting' && count($view['after']) === 1 && count($view['waiting_for']) === 1, 'the dependent waits', $view);
check($c->pop([$load], 0) === null, 'a waiting job is not popped');
$job = popAs($c, $extract, 'extract-1', 'x');
$c->ack($job['id'], $job['attempt'], $job['token'], result: ['rows' => 3]);
popAs($c, $load, 'load-1', 'y');
$results = $c->job('load-1')['dependency_results'] ?? null;
check(is_array($results) && array_values($results) === [['rows' => 3]], 'dependency_results', $results);
check(refused(fn () => $c->push($load, 'z', after: ['no-such-job'])) === 400, 'after a job that is not there: 400');

// A dead dependency: a 409, unless its dependent runs anyway (ready at once).
$c->push($extract, 'dies', ttr: 30, id: 'extract-dead', retry: ['max_attempts' => 1]);
$job = popAs($c, $extract, 'extract-dead', 'dies');
check($c->fail($job['id'], $job['attempt'], 'broken', $job['token'])['state'] === 'dead', 'extract-dead dead');
check(refused(fn () => $c->push($load, 'z', after: ['extract-dead'])) === 409, 'after a dead job: 409');
$id = $c->push($load, 'anyway', after: ['extract-dead'], onDependencyFailure: 'run');
popAs($c, $load, $id, 'anyway');

// pushBatch passes after and then through.
$c->push($extract, 'b', ttr: 30, id: 'extract-2');
$ids = $c->pushBatch([['topic' => $load, 'body' => 'b', 'id' => 'load-2', 'after' => ['extract-2'],
    'then' => [['topic' => "$topic-thumbs", 'body' => 'after load-2']]]]);
$view = $c->job('load-2');
check($ids === ['load-2'] && $view['state'] === 'waiting' && count($view['then'] ?? []) === 1, 'pushBatch with after and then', $view);

// then (with its result, and a then of its own) after an ack; on_dead after a death.
[$images, $thumbs, $notify, $alerts] = ["$topic-images", "$topic-thumbs-2", "$topic-notify", "$topic-alerts"];
$c->push($images, 'img 1', ttr: 30, id: 'resize-1',
    then: [['topic' => $thumbs, 'body' => 'thumb 1', 'with_result' => true, 'then' => [['topic' => $notify, 'body' => 'ready']]]],
    onDead: [['topic' => $alerts, 'body' => 'img 1 failed']]);
$view = $c->job('resize-1');
check(count($view['then'] ?? []) === 1 && count($view['on_dead'] ?? []) === 1, 'then and on_dead read back as ids', $view);
$job = popAs($c, $images, 'resize-1', 'img 1');
$c->ack($job['id'], $job['attempt'], $job['token'], result: ['w' => 64]);
$thumb = popAs($c, $thumbs, $view['then'][0], ['body' => 'thumb 1', 'result' => ['w' => 64]]);
$c->ack($thumb['id'], $thumb['attempt'], $thumb['token']);
popAs($c, $notify, null, 'ready');
$c->push($images, 'img 2', ttr: 30, id: 'resize-2', retry: ['max_attempts' => 1], onDead: [['topic' => $alerts, 'body' => 'img 2 failed']]);
$job = popAs($c, $images, 'resize-2', 'img 2');
$c->fail($job['id'], $job['attempt'], 'corrupt', $job['token']);
popAs($c, $alerts, null, 'img 2 failed', 10);
check($c->pop([$alerts], 0.5) === null, "resize-1's on_dead, though it completed");

// An ack's push with with_result.
$c->push($images, 'img 3', ttr: 30, id: 'resize-3');
$job = popAs($c, $images, 'resize-3', 'img 3');
$pushed = $c->ack($job['id'], $job['attempt'], $job['token'], result: 7, push: [['topic' => $thumbs, 'body' => 'thumb 3', 'with_result' => true]]);
popAs($c, $thumbs, $pushed[0] ?? '?', ['body' => 'thumb 3', 'result' => 7]);

// A batch: on_complete with the summary, once; getBatch done.
[$parts, $done] = ["$topic-parts", "$topic-parts-done"];
$batch = $c->createBatch([['topic' => $parts, 'body' => '1', 'ttr' => 30], ['topic' => $parts, 'body' => '2', 'ttr' => 30]],
    onComplete: ['topic' => $done, 'body' => 'report', 'with_result' => true], meta: ['report' => 42], withResults: true);
check(is_string($batch['id']) && count($batch['ids']) === 2, 'createBatch', $batch);
$view = $c->getBatch($batch['id']);
check($view['state'] === 'closed' && $view['total'] === 2 && $view['pending'] === 2 && $view['meta'] === ['report' => 42], 'getBatch', $view);
foreach ($batch['ids'] as $i => $want) {
    $job = popAs($c, $parts, $want, (string) ($i + 1));
    check(($job['batch'] ?? null) === $batch['id'], "a batch's job names its batch", $job);
    $c->ack($job['id'], $job['attempt'], $job['token'], result: ['pages' => $i + 3]);
}
$callback = $c->pop([$done], 10);
$summary = $callback['body']['result'] ?? null;
check($callback !== null && $callback['body']['body'] === 'report' && $summary['state'] === 'done' && $summary['batch'] === $batch['id']
    && $summary['completed'] === 2 && $summary['meta'] === ['report' => 42] && count($summary['results'] ?? []) === 2, 'on_complete', $callback);
check($c->pop([$done], 1.5) === null, 'on_complete came twice');
$view = $c->getBatch($batch['id']);
check($view['state'] === 'done' && $view['completed'] === 2 && $view['pending'] === 0 && isset($view['finished_at'])
    && isset($view['callbacks']['on_complete']), 'getBatch done', $view);

// on_death at the first death, its dead job's error in dead_jobs.
$dying = $c->createBatch([['topic' => $parts, 'body' => 'dies', 'retry' => ['max_attempts' => 1]]], onDeath: ['topic' => $alerts, 'body' => 'a part died']);
$job = popAs($c, $parts, $dying['ids'][0], 'dies');
$c->fail($job['id'], $job['attempt'], 'no ink', $job['token']);
popAs($c, $alerts, null, 'a part died', 10);
$view = $c->getBatch($dying['id']);
check($view['dead'] === 1 && ($view['dead_jobs'][$job['id']] ?? null) === 'no ink', 'dead_jobs', $view);

// An open batch: added to, closed, cancelled.
$open = $c->createBatch([], open: true);
check($open['ids'] === [] && $c->getBatch($open['id'])['state'] === 'open', 'an open batch', $open);
$added = $c->addToBatch($open['id'], [['topic' => "$topic-later", 'body' => 'x', 'delay' => 3600]]);
check(count($added) === 1 && ($c->job($added[0])['batch'] ?? null) === $open['id'], 'addToBatch', $added);
$view = $c->closeBatch($open['id']);
check($view['state'] === 'closed' && $view['total'] === 1, 'closeBatch', $view);
check($c->closeBatch($open['id'])['state'] === 'closed', 'closeBatch again');
check($c->cancelBatch($open['id']) === 1, 'cancelBatch');
check($c->getBatch($open['id'])['state'] === 'cancelled' && $c->cancelBatch($open['id']) === 0, 'cancelBatch again');
check(refused(fn () => $c->closeBatch($open['id'])) === 409, 'closeBatch of a cancelled batch: 409');
check(refused(fn () => $c->addToBatch($open['id'], [['topic' => $parts, 'body' => 'late']])) === 409, 'addToBatch to a cancelled batch: 409');
check(refused(fn () => $c->cancelBatch($batch['id'])) === 409, 'cancelBatch of a done batch: 409');
foreach (['getBatch', 'closeBatch', 'cancelBatch'] as $call) {
    check(refused(fn () => $c->$call('12345')) === 404, "$call of no batch: 404");
}
check(refused(fn () => $c->addToBatch('12345', [['topic' => $parts, 'body' => 'x']])) === 404, 'addToBatch to no batch: 404');
check(refused(fn () => $c->createBatch([['body' => 'no topic']])) === 400, 'a bad batch: 400');
check(refused(fn () => $c->createBatch([], onComplete: ['topic' => $done, 'body' => 'x', 'after' => ['load-1']])) === 400, 'a callback with after: 400');
echo "ok\n";
