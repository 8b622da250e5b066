<?php
// Push jobs to gmq: php clients/php/producer.php http://127.0.0.1:8000 mail 10
// (the token, if the broker wants one, from the environment: GMQ_TOKEN=...)
require __DIR__ . '/autoload.php'; // in a Composer project: vendor/autoload.php

[$url, $topic, $n] = [$argv[1] ?? 'http://127.0.0.1:8000', $argv[2] ?? 'mail', (int)($argv[3] ?? 10)];
$c = new Gmq\Client($url, token: getenv('GMQ_TOKEN') ?: null);
$half = intdiv($n, 2);
for ($i = 0; $i < $half; $i++) { // one by one, then the rest as one batch
    echo 'pushed ', $c->push($topic, "job $i", ttr: 30), "\n";
}
$batch = [];
for ($i = $half; $i < $n; $i++) {
    $batch[] = ['topic' => $topic, 'body' => "job $i", 'TTR' => 30];
}
if ($batch) {
    foreach ($c->pushBatch($batch) as $id) {
        echo "pushed $id\n";
    }
}
