<?php
// A stand-in for gmq under `php -S` (the router script), to test what the
// broker seldom says: it answers each request with the next of a plan that
// the test script writes to $STUB_DIR/plan.json ([status, [headers], body]
// each), and logs each request (method, path, Authorization, body) as a line
// of JSON to $STUB_DIR/requests.
$dir = getenv('STUB_DIR');
$plan = json_decode((string) @file_get_contents("$dir/plan.json"), true) ?: [];
[$status, $headers, $body] = array_shift($plan) ?? [500, [], '{"error":"the stub has no plan left"}'];
file_put_contents("$dir/plan.json", json_encode($plan));
file_put_contents("$dir/requests", json_encode([
    'method' => $_SERVER['REQUEST_METHOD'],
    'path' => $_SERVER['REQUEST_URI'],
    'auth' => $_SERVER['HTTP_AUTHORIZATION'] ?? null,
    'body' => json_decode(file_get_contents('php://input'), true),
]) . "\n", FILE_APPEND);
http_response_code($status);
foreach ($headers as $header) {
    header($header);
}
header('Content-Type: application/json');
echo $body;
