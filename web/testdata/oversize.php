<?php
// Sends oversized pushes with PHP's HTTP stream client, as GmqClient.php
// does, and counts the answers: every one must be read as a 413.
// usage: php oversize.php URL BYTES TRIES
[, $url, $size, $tries] = $argv;
$data = json_encode(['topic' => 'big', 'body' => str_repeat('x', (int)$size)]);
$counts = [];
for ($i = 0; $i < (int)$tries; $i++) {
    $context = stream_context_create(['http' => [
        'method' => 'POST',
        'header' => "Content-Type: application/json\r\n",
        'content' => $data,
        'timeout' => 30,
        'ignore_errors' => true,
    ]]);
    $text = @file_get_contents($url . '/api/v1/jobs', false, $context);
    if ($text === false) {
        $got = 'no answer: ' . (error_get_last()['message'] ?? '');
    } else {
        preg_match('{HTTP/\S+ (\d{3})}', $http_response_header[0] ?? '', $m);
        $got = ($m[1] ?? '0') === '413' && str_contains($text, 'too large') ? '413' : ($m[1] ?? '0') . ' ' . $text;
    }
    $counts[$got] = ($counts[$got] ?? 0) + 1;
}
echo json_encode($counts), "\n";
