<?php
// Events through the PHP client: argv = base URL, topic, the URL of a proxy
// to the broker whose POST /-/cut drops every connection through it, and
// the topic's events bucket.
// A generator of the topic's events, through the proxy, sees a job pushed
// (by its onReady, once the stream is in place), reserved and completed
// with its result. Its connection is cut while it is suspended after the
// reserved event; the ack and a push made meanwhile come after it connects
// again with the last event's id, each once, and then what follows. A
// position older than the bucket keeps comes as a lost event, then the
// rest from the oldest kept; types filter; an unknown type throws a 400.
// Prints "ok".
require 'vendor/autoload.php';

use Gmq\GmqException;

[$base, $topic, $proxy, $bucket] = array_slice($argv, 1);
$c = new Gmq\Client($base);
if (function_exists('pcntl_alarm')) {
    pcntl_alarm(60); // a stream that never brings what is expected ends the script, not the test run
}

function check(bool $ok, string $what, $got = null): void
{
    $ok or exit("$what: " . json_encode($got) . "\n");
}

// call sends what the client has no call for (a topic's settings, the proxy's cut): the answer decoded.
function call(string $method, string $url, ?array $payload = null): mixed
{
    $http = ['method' => $method, 'header' => 'Content-Type: application/json', 'ignore_errors' => true,
        'content' => $payload === null ? '' : json_encode($payload)];
    $answer = file_get_contents($url, false, stream_context_create(['http' => $http]));
    check(str_contains($http_response_header[0] ?? '', ' 200 '), "$method $url", $answer);
    return json_decode($answer, true);
}

// expect requires $event to be of $type for job $id at $attempt.
function expect(mixed $event, string $topic, string $type, string $id, int $attempt): array
{
    check(is_array($event) && $event['type'] === $type && $event['topic'] === $topic && $event['id'] === $id
        && $event['attempt'] === $attempt && $event['internal_id'] > 0 && $event['at'] !== '' && $event['event_id'] !== '',
        "$type of $id at $attempt", $event);
    return $event;
}

call('PUT', "$base/api/v1/topics/$topic/config", ['events' => true]);

$readies = 0;
$events = (new Gmq\Client($proxy))->events([$topic], onReady: function () use (&$readies, $c, $topic): void {
    if (++$readies === 1) { // the stream is in place: the events of this push come
        $c->push($topic, 'hi', id: 'm-1', ttr: 30);
    }
});
expect($events->current(), $topic, 'pushed', 'm-1', 0);
$job = $c->pop([$topic], 1);
check(($job['id'] ?? null) === 'm-1', 'pop', $job);
$events->next();
$reserved = expect($events->current(), $topic, 'reserved', 'm-1', 1);
check($events->key() === $reserved['event_id'], 'the key is the event id', $events->key());

check(call('POST', "$proxy/-/cut") === ['cut' => 1], 'the cut');
$c->ack('m-1', $job['attempt'], $job['token'], result: ['url' => '/r/m-1']);
$c->push($topic, 'hi', id: 'm-2', ttr: 30);
$events->next();
$completed = expect($events->current(), $topic, 'completed', 'm-1', 1);
check($completed['result'] === ['url' => '/r/m-1'], 'the result', $completed);
$events->next();
expect($events->current(), $topic, 'pushed', 'm-2', 0);
$c->push($topic, 'hi', id: 'm-3', ttr: 30);
$events->next();
expect($events->current(), $topic, 'pushed', 'm-3', 0);
check($readies === 2, 'connected twice', $readies);
unset($events); // closes its stream

$seen = [];
foreach ($c->events([$topic], types: ['completed'], lastEventId: "$bucket:1-0") as $event) {
    $seen[] = $event;
    if (count($seen) === 2) {
        break; // leaving the loop closes the stream
    }
}
check($seen[0]['type'] === Gmq\Client::LOST && $seen[0]['buckets'] === [(int) $bucket] && $seen[0]['error'] !== ''
    && $seen[0]['event_id'] !== '', 'lost', $seen);
expect($seen[1], $topic, 'completed', 'm-1', 1);

try {
    $c->events([$topic], types: ['bogus'])->current();
    check(false, 'an unknown type was taken');
} catch (GmqException $e) {
    check($e->status === 400, 'an unknown type', $e->getMessage());
}
echo "ok\n";
