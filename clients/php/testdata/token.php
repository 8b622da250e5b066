<?php
// A broker with a token: argv = base URL, topic, token. Without the token
// every call answers 401; with it, they work.
require 'vendor/autoload.php';

[$url, $topic, $token] = [$argv[1], $argv[2], $argv[3]];
foreach ([null, 'wrong-token'] as $bad) {
    try {
        (new Gmq\Client($url, token: $bad))->push($topic, 'x');
        exit("no token: pushed\n");
    } catch (Gmq\GmqException $e) {
        ($e->status === 401) or exit("token " . json_encode($bad) . ": {$e->getMessage()}\n");
    }
}
$c = new Gmq\Client($url, token: $token);
$id = $c->push($topic, 'with the token');
$job = $c->pop([$topic], 1);
($job['id'] === $id) or exit("pop: " . json_encode($job) . "\n");
$c->ack($job['id'], $job['attempt']);
echo "ok\n";
