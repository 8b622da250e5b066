<?php
// A gmq JSON-RPC client as gmq's PHP users wrote them: stream_socket_client
// and fgets, one JSON object per line. Usage: php rpc_client.php HOST PORT.
// Prints "ok ..." and exits 0, or says what failed and exits 1.

function check(bool $cond, string $what): void {
    if (!$cond) {
        fwrite(STDERR, "failed: $what\n");
        exit(1);
    }
}

$fp = stream_socket_client("tcp://{$argv[1]}:{$argv[2]}", $errno, $errstr, 10);
check($fp !== false, "connect: $errstr");
$id = 0;
function call($fp, string $method, $param): array {
    global $id;
    $id++;
    fwrite($fp, json_encode(['method' => $method, 'params' => [$param], 'id' => (string)$id]) . "\n");
    $reply = json_decode(fgets($fp), true);
    check($reply['id'] === (string)$id, "reply id");
    return [$reply['result'], $reply['error']];
}

[$result, $err] = call($fp, 'Service.Push', ['id' => 'php_1', 'topic' => 'php_jobs', 'body' => 'hello', 'delay' => '3', 'TTR' => '30']);
check($result === 'success' && $err === null, "push: " . json_encode([$result, $err]));
[$job, $err] = call($fp, 'Service.Pop', ['php_jobs']);
check($job === null && $err === 'empty', 'delayed job not ready yet'); // Pop waited 1s of the 3
sleep(2);
[$job, $err] = call($fp, 'Service.Pop', ['php_jobs']);
check($err === null && $job['id'] === 'php_1' && $job['body'] === 'hello' && $job['delay'] === '3', 'pop after the delay: ' . json_encode($job));
[$result, $err] = call($fp, 'Service.Ack', $job['id']);
check($result === 'success', 'ack');
echo "ok php: push, delayed pop, ack\n";
