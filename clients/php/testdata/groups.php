<?php
// Fair groups through the PHP client: argv = base URL, topic. Prints "ok".
require 'vendor/autoload.php';

use Gmq\GmqException;

$c = new Gmq\Client($argv[1]);
$topic = $argv[2];

function check(bool $ok, string $what, $got = null): void
{
    $ok or exit("$what: " . json_encode($got) . "\n");
}

// tenant-a has three jobs, tenant-b two: the pops take the groups in turn,
// priority ordering a group's own jobs, and each job shows its group.
$c->push($topic, 'a3', priority: 30, group: 'tenant-a');
$c->push($topic, 'a1', priority: 10, group: 'tenant-a');
$c->push($topic, 'b1', priority: 50, group: 'tenant-b', unique: ['key' => 'b1', 'for' => 60]);
$c->pushBatch([
    ['topic' => $topic, 'body' => 'a2', 'priority' => 20, 'group' => 'tenant-a'],
    ['topic' => $topic, 'body' => 'b2', 'priority' => 60, 'group' => 'tenant-b', 'id' => 'b-2'],
]);
check(($c->job('b-2')['group'] ?? null) === 'tenant-b', 'job b-2', $c->job('b-2'));
$popped = [];
for ($i = 0; $i < 5; $i++) {
    $job = $c->pop([$topic], 1);
    check($job !== null, 'pop', $popped);
    $popped[] = ($job['group'] ?? '') . '/' . $job['body'];
}
check($popped === ['tenant-a/a1', 'tenant-b/b1', 'tenant-a/a2', 'tenant-b/b2', 'tenant-a/a3'], 'round robin', $popped);

// popMany's jobs carry their groups; a job without one has no 'group'.
$c->push("$topic-mail", 'x', group: 'tenant-é');
$c->push("$topic-mail", 'y');
$jobs = array_column($c->popMany(["$topic-mail"], 2, 1), null, 'body');
check(($jobs['x']['group'] ?? null) === 'tenant-é' && !isset($jobs['y']['group']), 'popMany', $jobs);

// A bad group is a 400 naming it; 200 bytes is good.
foreach ([str_repeat('g', 201), "tenant\n42", "tenant\x7f"] as $bad) {
    try {
        $c->push($topic, 'x', group: $bad);
        exit('pushed with the group ' . json_encode($bad) . "\n");
    } catch (GmqException $e) {
        check($e->status === 400 && str_contains($e->getMessage(), 'group'), 'bad group', $e->getMessage());
    }
}
check($c->push("$topic-long", 'x', group: str_repeat('g', 200)) !== '', 'a group of 200 bytes');
echo "ok\n";
