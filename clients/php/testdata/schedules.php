<?php
// Cron schedules and releasing a unique key through the PHP client: argv =
// base URL, topic. Prints "ok".
require 'vendor/autoload.php';

use Gmq\GmqException;

$c = new Gmq\Client($argv[1]);
$topic = $argv[2];

function check(bool $ok, string $what, $got = null): void
{
    $ok or exit("$what: " . json_encode($got) . "\n");
}

/** Runs $call, which must throw a GmqException with $status whose message holds $says. */
function throws(int $status, string $what, callable $call, string $says = ''): GmqException
{
    try {
        $call();
    } catch (GmqException $e) {
        check($e->status === $status && str_contains($e->getMessage(), $says), "$what: want $status saying '$says'", $e->getMessage());
        return $e;
    }
    exit("$what: no error, want $status\n");
}

function drain(Gmq\Client $c, string $topic): void
{
    while (($job = $c->pop([$topic])) !== null) {
        $c->ack($job['id'], $job['attempt']);
    }
}

// A schedule every second pushes its job; the schedule shows the fire.
$s = $c->setSchedule('tick', ['cron' => '* * * * * *', 'job' => ['topic' => $topic, 'body' => 'tick', 'TTR' => 30, 'priority' => 7, 'group' => 'clock']]);
check($s['name'] === 'tick' && $s['tz'] === 'UTC' && $s['overlap'] === 'allow' && $s['paused'] === false && isset($s['next']), 'the new schedule', $s);
check($s['job'] == ['topic' => $topic, 'body' => 'tick', 'TTR' => 30, 'priority' => 7, 'delay' => 0, 'group' => 'clock'], 'its job', $s);
$job = $c->pop([$topic], 3);
check($job !== null && $job['body'] === 'tick' && $job['TTR'] == 30 && $job['group'] === 'clock', 'the pushed job', $job);
$c->ack($job['id'], $job['attempt']);
for ($deadline = microtime(true) + 3; !($s['fires'] >= 1 && isset($s['last_id'], $s['last'])); $s = $c->schedule('tick')) {
    check(microtime(true) < $deadline, 'no fire shown', $s);
    usleep(50000);
}

// Paused: no next fire and no job from the cron; a fire now still pushes.
$s = $c->setSchedule('tick', ['paused' => true]);
check($s['paused'] === true && !isset($s['next']), 'paused', $s);
drain($c, $topic); // a fire may have come between the ack and the pause
check($c->pop([$topic], 1.5) === null, 'a paused schedule pushed');
$fired = $c->fireSchedule('tick');
check($fired['id'] !== '' && $fired['internal_id'] > 0, 'fire now', $fired);
$job = $c->pop([$topic], 1);
check($job !== null && $job['id'] === $fired['id'], 'the fired job', [$job, $fired]);
$c->ack($job['id'], $job['attempt']);
$s = $c->schedule('tick');
check($s['last_id'] === $fired['id'] && !isset($s['next']), 'after a fire now', $s);

// Overlap skip: while the last fire's job waits, a fire now is a 409.
$c->setSchedule('tick', ['overlap' => 'skip']);
$first = $c->fireSchedule('tick');
throws(409, 'a second fire under overlap skip', fn () => $c->fireSchedule('tick'), 'overlap skip');
$job = $c->pop([$topic], 1);
check($job !== null && $job['id'] === $first['id'], 'pop', $job);
$c->ack($job['id'], $job['attempt']);
$c->fireSchedule('tick');

// null takes a field out of the run-time layer: overlap back to allow.
$s = $c->setSchedule('tick', ['cron' => '0 0 1 1 *', 'overlap' => null]);
check($s['overlap'] === 'allow' && $s['cron'] === '0 0 1 1 *' && !isset($s['run']['overlap']), 'overlap reset', $s);
$c->setSchedule('other', ['cron' => '@daily', 'tz' => 'Europe/Berlin', 'job' => ['topic' => $topic, 'body' => 'x']]);
$names = array_map(fn ($s) => [$s['name'], $s['tz']], $c->schedules());
check($names === [['other', 'Europe/Berlin'], ['tick', 'UTC']], 'schedules', $names);

// Deleted: every call on it is a 404.
$c->deleteSchedule('tick');
throws(404, 'schedule', fn () => $c->schedule('tick'));
throws(404, 'deleteSchedule', fn () => $c->deleteSchedule('tick'));
throws(404, 'fireSchedule', fn () => $c->fireSchedule('tick'));

// A bad definition is a 400 that says what is wrong; no change at all is refused unsent.
$job = ['topic' => $topic, 'body' => 'x'];
foreach ([
    [['job' => $job], 'cron is missing'],
    [['cron' => '@daily'], 'job is missing'],
    [['cron' => '61 * * * *', 'job' => $job], 'cron'],
    [['cron' => '@daily', 'tz' => 'Mars/Olympus', 'job' => $job], 'tz'],
    [['cron' => '@daily', 'job' => $job, 'overlap' => 'never'], 'overlap'],
    [['cron' => '@daily', 'job' => $job + ['id' => 'a-1']], '"id"'],
    [['cron' => '@daily', 'job' => $job, 'every' => 5], '"every"'],
] as [$changes, $says]) {
    throws(400, json_encode($changes), fn () => $c->setSchedule('bad', $changes), $says);
}
throws(400, 'a bad name', fn () => $c->setSchedule('bad~name', ['cron' => '@daily', 'job' => $job]));
foreach ([[], ['@daily']] as $changes) {
    try {
        $c->setSchedule('bad', $changes);
        exit('a change of ' . json_encode($changes) . " was sent\n");
    } catch (InvalidArgumentException) {
    }
}

// releaseUnique frees a held key (one with a slash and a space too): the
// next push with it is a new job. A key not held is a 404.
foreach (['user-42', 'a/b c%'] as $key) {
    $unique = ['key' => $key, 'for' => 3600];
    $held = $c->push("$topic-mail", 'hi', unique: $unique);
    $e = throws(409, "held key $key", fn () => $c->push("$topic-mail", 'hi', unique: $unique));
    check($e->heldBy === $held['id'], 'held by', [$e->heldBy, $held]);
    $c->releaseUnique("$topic-mail", $key);
    $again = $c->push("$topic-mail", 'hi', unique: $unique);
    check($again['id'] !== $held['id'], "a push after releasing $key", [$held, $again]);
}
throws(404, 'a key not held', fn () => $c->releaseUnique("$topic-mail", 'nobody'));
echo "ok\n";
