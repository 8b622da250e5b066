<?php
// Jobs PHP cannot decode (two with a lone surrogate escape, then one nested
// 3,000 deep, stored before gmq refused them): argv = base URL, topic
// holding the three, then a good one whose body is {"ok": "\ufffd"}. pop
// gives the first back marked (body null, decode_error), with the fields a
// fail needs; popMany marks the second and third alone, and reads the good
// one as usual.
require 'vendor/autoload.php';

[$url, $topic] = array_slice($argv, 1);
$c = new Gmq\Client($url);
$job = $c->pop([$topic], 1);
($job !== null && $job['body'] === null && str_contains($job['decode_error'] ?? '', 'Single unpaired UTF-16 surrogate')
    && is_string($job['token']) && $job['attempt'] === 1) or exit('pop: ' . var_export($job, true) . "\n");
$failed = $c->fail((string) $job['id'], $job['attempt'], $job['decode_error'], $job['token']);
in_array($failed['state'], ['delayed', 'dead'], true) or exit('fail: ' . json_encode($failed) . "\n");

$jobs = $c->popMany([$topic], 5, 1);
(count($jobs) === 3 && $jobs[0]['body'] === null && str_contains($jobs[0]['decode_error'] ?? '', 'surrogate')
    && $jobs[1]['body'] === null && str_contains($jobs[1]['decode_error'] ?? '', 'Maximum stack depth exceeded')
    && $jobs[2]['body'] === ['ok' => "\u{fffd}"] && !isset($jobs[2]['decode_error'])) or exit('popMany: ' . var_export($jobs, true) . "\n");
echo "ok\n";
