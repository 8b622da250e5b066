<?php
// The client as it was before the package: require 'GmqClient.php', new
// GmqClient(base, timeout), GmqException. argv = base URL, topic.
require 'vendor/gmq/client/GmqClient.php';
require 'vendor/gmq/client/GmqClient.php'; // twice does no harm

$c = new GmqClient($argv[1], 5.0);
$id = $c->push($argv[2], 'old code', ttr: 30);
$job = $c->pop([$argv[2]], 1);
($job['id'] === $id) or exit("pop: " . json_encode($job) . "\n");
$c->ack($job['id'], $job['attempt']);
try {
    $c->ack($job['id'], $job['attempt']);
    exit("second ack: no error\n");
} catch (GmqException $e) {
    ($e->status === 404) or exit("second ack: {$e->getMessage()}\n");
}
echo "ok\n";
