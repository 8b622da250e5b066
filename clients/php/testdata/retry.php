<?php
// Retries on 503 against the stub (stub.php): argv = the stub's base URL, its
// directory. Prints "ok" when every case went as the README says.
require 'vendor/autoload.php';

use Gmq\Client;
use Gmq\GmqException;

[$url, $dir] = [$argv[1], $argv[2]];

/** Sets the stub's answers to come, forgets the requests it saw. */
function plan(string $dir, array ...$answers): void
{
    file_put_contents("$dir/plan.json", json_encode($answers));
    @unlink("$dir/requests");
}

/** The requests the stub saw since plan(). */
function requests(string $dir): array
{
    return array_map(fn ($l) => json_decode($l, true), file("$dir/requests", FILE_IGNORE_NEW_LINES) ?: []);
}

function check(bool $ok, string $what, $got = null): void
{
    $ok or exit("$what: " . json_encode($got) . "\n");
}

const BUSY = [503, ['Retry-After: 1'], '{"error":"redis is unreachable"}'];
const BUSY_NOW = [503, ['Retry-After: 0'], '{"error":"redis is unreachable"}'];

$c = new Client($url, token: 's3cret');

// A push with a client id: 503 (Retry-After: 1), then 409 on the retry: the
// first try was stored after all, so the id comes back as stored, a second later.
plan($dir, BUSY, [409, [], '{"error":"push \"order-42\": a live job already has this id"}']);
$start = microtime(true);
check($c->push('mail', 'hi', id: 'order-42') === 'order-42', 'push with id');
$took = microtime(true) - $start;
check($took >= 0.95 && $took < 3, 'Retry-After honoured', $took);
$seen = requests($dir);
check(count($seen) === 2 && $seen[1]['body']['id'] === 'order-42', 'two tries of one push', $seen);
check(array_unique(array_column($seen, 'auth')) === ['Bearer s3cret'], 'the token on every try', $seen);

// A 409 on the first try is another job's: an error.
plan($dir, [409, [], '{"error":"a live job already has this id"}']);
try {
    $c->push('mail', 'hi', id: 'order-42');
    exit("409 at once: no error\n");
} catch (GmqException $e) {
    check($e->status === 409, '409 at once', $e->getMessage());
}

// A unique push: its 409 on a retry is "stored" when it is the id's, or
// names the pushed id as the key's holder; another holder is thrown, named.
$held = fn (string $by) => [409, [], json_encode(['error' => "unique key \"k\" of topic \"mail\" is held by job $by", 'id' => $by, 'internal_id' => 7])];
$key = ['key' => 'k', 'for' => 60];
plan($dir, BUSY_NOW, [409, [], '{"error":"push \"order-42\": a live job already has this id"}']);
check($c->push('mail', 'hi', id: 'order-42', unique: $key) === ['id' => 'order-42'], "unique: the id's 409 on a retry");
plan($dir, BUSY_NOW, $held('order-42'));
check($c->push('mail', 'hi', id: 'order-42', unique: $key) === ['id' => 'order-42'], 'unique: held by itself on a retry');
check(requests($dir)[0]['body']['unique'] === $key, 'unique sent', requests($dir));
foreach (['order-42' => 'theirs', '' => '7'] as $id => $by) {
    plan($dir, BUSY_NOW, $held($by));
    try {
        $c->push('mail', 'hi', id: $id === '' ? null : $id, unique: $key);
        exit("unique: held by $by on a retry: no error\n");
    } catch (GmqException $e) {
        check($e->status === 409 && $e->heldBy === $by, "unique: held by $by on a retry", [$e->getMessage(), $e->heldBy]);
    }
}

// The default is 3 retries: 4 tries, then the 503 is thrown with its answer.
plan($dir, BUSY_NOW, BUSY_NOW, BUSY_NOW, BUSY_NOW, [201, [], '{"id":"never"}']);
try {
    $c->pop(['mail'], 0);
    exit("4 times 503: no error\n");
} catch (GmqException $e) {
    check($e->status === 503 && str_contains($e->getMessage(), 'after 4 tries') && count(requests($dir)) === 4, '4 tries', $e->getMessage());
}
// retries: 0 tries once; the count is the client's.
plan($dir, BUSY_NOW, [201, [], '{"id":"7"}']);
try {
    (new Client($url, retries: 0))->push('mail', 'hi');
    exit("retries 0: no error\n");
} catch (GmqException $e) {
    check($e->status === 503 && count(requests($dir)) === 1, 'retries 0', $e->getMessage());
}

// Without Retry-After the backoff starts at 0.25 s and doubles; maxBackoff caps it, a long Retry-After too.
$capped = new Client($url, maxBackoff: 0.1);
plan($dir, [503, ['Retry-After: 30'], '{"error":"busy"}'], [503, [], '{"error":"busy"}'], [201, [], '{"id":"8"}']);
$start = microtime(true);
check($capped->push('mail', 'hi') === '8', 'capped push');
check(microtime(true) - $start < 1, 'capped waits', microtime(true) - $start);

// A 404 on a retried ack: the first try acked it.
plan($dir, BUSY_NOW, [404, [], '{"error":"ack \"5\": no such job"}']);
$c->ack('5', 1);
// ... but at once it is an error.
plan($dir, [404, [], '{"error":"ack \"5\": no such job"}']);
try {
    $c->ack('5', 1);
    exit("404 at once: no error\n");
} catch (GmqException $e) {
    check($e->status === 404, 'ack 404', $e->getMessage());
}

// A 404 on a retried deleteSchedule or releaseUnique: the first try did it
// (names escaped in the path); at once it is an error.
plan($dir, BUSY_NOW, [404, [], '{"error":"schedule \"a b\": not found"}']);
$c->deleteSchedule('a b');
check(array_column(requests($dir), 'path') === ['/api/v1/schedules/a%20b', '/api/v1/schedules/a%20b'], 'deleteSchedule path', requests($dir));
plan($dir, BUSY_NOW, [404, [], '{"error":"unique key \"k/1\" of topic \"t\": not found"}']);
$c->releaseUnique('t', 'k/1');
check(array_column(requests($dir), 'method') === ['DELETE', 'DELETE'] && requests($dir)[1]['path'] === '/api/v1/topics/t/unique/k%2F1', 'releaseUnique', requests($dir));
plan($dir, [404, [], '{"error":"schedule \"s\": not found"}']);
try {
    $c->deleteSchedule('s');
    exit("deleteSchedule 404 at once: no error\n");
} catch (GmqException $e) {
    check($e->status === 404, 'deleteSchedule 404', $e->getMessage());
}
// A fire is not taken as done: a retry's 409 is thrown.
plan($dir, BUSY_NOW, [409, [], '{"error":"overlap skip"}']);
try {
    $c->fireSchedule('s');
    exit("fireSchedule: a retry's 409, no error\n");
} catch (GmqException $e) {
    check($e->status === 409 && count(requests($dir)) === 2, "fireSchedule: a retry's 409", $e->getMessage());
}

// A batch with client ids: the retry resends only what the 503 says was not stored.
plan($dir, [503, ['Retry-After: 0'], '{"error":"redis went away","stored_ids":["a"]}'], [201, [], '{"ids":["b"]}']);
check($c->pushBatch([['id' => 'a', 'topic' => 't', 'body' => '1'], ['id' => 'b', 'topic' => 't', 'body' => '2']]) === ['a', 'b'], 'batch ids');
check(array_column(requests($dir)[1]['body']['jobs'], 'id') === ['b'], 'batch retry', requests($dir));
// A 409 to a retried batch: each job that answer did not store is pushed on
// its own, its 409 read as push reads it; a unique job that replaced a
// waiting job is that job.
plan($dir, BUSY_NOW, [409, [], '{"error":"job 0: push \"a\": a live job already has this id","stored_ids":["c"]}'],
    [409, [], '{"error":"push \"a\": a live job already has this id"}'], [200, [], '{"id":"held","internal_id":3,"unique":"replaced"}']);
$batch = [['id' => 'a', 'topic' => 't', 'body' => '1'], ['id' => 'b', 'topic' => 't', 'body' => '2', 'unique' => ['key' => 'k', 'for' => 60, 'mode' => 'replace']],
    ['id' => 'c', 'topic' => 't', 'body' => '3']];
check($c->pushBatch($batch) === ['a', 'held', 'c'], 'batch 409 on a retry', requests($dir));
check(array_column(requests($dir), 'path') === ['/api/v1/jobs/batch', '/api/v1/jobs/batch', '/api/v1/jobs', '/api/v1/jobs'], 'batch 409 carried on alone', requests($dir));
// ... and a key held by another job is thrown.
plan($dir, BUSY_NOW, [409, [], '{"error":"job 0: unique key \"k\" of topic \"t\" is held by job theirs","stored_ids":[]}'], $held('theirs'));
try {
    $c->pushBatch([['id' => 'b', 'topic' => 't', 'body' => '2', 'unique' => $key]]);
    exit("batch: held by another on a retry: no error\n");
} catch (GmqException $e) {
    check($e->status === 409 && $e->heldBy === 'theirs', 'batch: held by another on a retry', $e->getMessage());
}

// Without client ids, a 503 after some were stored is not retried: it would store them twice.
plan($dir, [503, ['Retry-After: 0'], '{"error":"redis went away","stored_ids":["9"]}'], [201, [], '{"ids":["10"]}']);
try {
    $c->pushBatch([['topic' => 't', 'body' => '1'], ['topic' => 't', 'body' => '2']]);
    exit("batch without ids: no error\n");
} catch (GmqException $e) {
    check($e->status === 503 && $e->answer['stored_ids'] === ['9'] && count(requests($dir)) === 1, 'batch without ids', $e->getMessage());
}

// An ack that pops the next: once a 503 says "acked", the retry only pops.
plan($dir, [503, ['Retry-After: 0'], '{"error":"redis went away","acked":"5"}'], [200, [], '{"id":"6","attempt":1}']);
check($c->ackAndPop('5', 1, ['mail'], 0)['id'] === '6', 'ackAndPop after acked');
check(array_column(requests($dir), 'path') === ['/api/v1/jobs/5/ack', '/api/v1/pop'], 'ackAndPop retry', requests($dir));

// A push after a dependency: a retry's 409 for a dependency that died since
// names no job, as the id's does, but is no "stored": thrown.
plan($dir, BUSY_NOW, [409, [], '{"error":"conflict: after: job 7 is dead, so this job would be cancelled at once"}']);
try {
    $c->push('mail', 'hi', id: 'order-43', after: ['dep-7']);
    exit("after a dependency dead since: no error\n");
} catch (GmqException $e) {
    check($e->status === 409 && requests($dir)[1]['body']['after'] === ['dep-7'], 'after a dependency dead since', $e->getMessage());
}

// A batch's create: a 503 that names no batch (none of its jobs pushed) is
// retried; one that names a batch (its jobs pushed, then cancelled) is thrown at once.
$jobs = [['topic' => 't', 'body' => '1', 'id' => 'p1']];
plan($dir, BUSY_NOW, [201, [], '{"id":"70","ids":["p1"]}']);
check($c->createBatch($jobs, meta: ['m' => 1], open: true) === ['id' => '70', 'ids' => ['p1']], 'createBatch after a 503', requests($dir));
$seen = requests($dir);
check(count($seen) === 2 && $seen[1]['path'] === '/api/v1/batches' && $seen[1]['body'] === ['jobs' => $jobs, 'meta' => ['m' => 1], 'open' => true],
    'createBatch sent again', $seen);
plan($dir, [503, ['Retry-After: 0'], '{"error":"redis went away","batch":"80"}'], [201, [], '{"id":"81","ids":["p1"]}']);
try {
    $c->createBatch($jobs);
    exit("createBatch: a 503 naming its batch was retried\n");
} catch (GmqException $e) {
    check($e->status === 503 && $e->answer['batch'] === '80' && count(requests($dir)) === 1, 'createBatch: a 503 naming its batch', $e->getMessage());
}

// addToBatch: with client ids a 503 is retried; without, thrown at once (it may have added some).
plan($dir, BUSY_NOW, [201, [], '{"ids":["p2"]}']);
check($c->addToBatch('70', [['topic' => 't', 'body' => '2', 'id' => 'p2']]) === ['p2'], 'addToBatch with ids after a 503');
check(array_column(requests($dir), 'path') === ['/api/v1/batches/70/jobs', '/api/v1/batches/70/jobs'], 'addToBatch sent again', requests($dir));
plan($dir, BUSY_NOW, [201, [], '{"ids":["9"]}']);
try {
    $c->addToBatch('70', [['topic' => 't', 'body' => '3']]);
    exit("addToBatch without ids: a 503 was retried\n");
} catch (GmqException $e) {
    check($e->status === 503 && count(requests($dir)) === 1, 'addToBatch without ids', $e->getMessage());
}

// closeBatch and cancelBatch are retried: again on a closed or cancelled batch changes nothing.
plan($dir, BUSY_NOW, [200, [], '{"id":"70","state":"closed","total":2}'], BUSY_NOW, [200, [], '{"cancelled":1}']);
check($c->closeBatch('70')['state'] === 'closed' && $c->cancelBatch('70') === 1, 'closeBatch and cancelBatch after a 503');
check(array_column(requests($dir), 'method') === ['POST', 'POST', 'DELETE', 'DELETE'], 'closeBatch and cancelBatch sent again', requests($dir));
echo "ok\n";
