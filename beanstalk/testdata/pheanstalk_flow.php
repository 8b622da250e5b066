<?php
// A beanstalkd user's flow with pheanstalk (Debian's php-pda-pheanstalk, v4):
// a producer puts into several tubes; consumers reserve, delete, release, bury
// and kick. Usage: php pheanstalk_flow.php HOST PORT. Prints "ok ..." and exits
// 0, or prints what went wrong and exits 1.
require_once '/usr/share/php/Pheanstalk/autoload.php';

use Pheanstalk\Pheanstalk;

function check(bool $cond, string $what): void {
    if (!$cond) {
        fwrite(STDERR, "failed: $what\n");
        exit(1);
    }
}

[$host, $port] = [$argv[1], (int)$argv[2]];
$producer = Pheanstalk::create($host, $port);
$tubes = ['php-mail', 'php-thumbs'];
foreach ($tubes as $tube) {
    $producer->useTube($tube);
    for ($i = 0; $i < 10; $i++) {
        $producer->put("$tube-$i", $i % 3, 0, 30);
    }
}
$stats = $producer->statsTube('php-mail');
check($stats['current-jobs-ready'] == 10, 'stats-tube counts 10 ready jobs');

$consumer = Pheanstalk::create($host, $port);
$consumer->watch('php-mail')->watch('php-thumbs')->ignore('default');
$done = [];
$released = [];
while (($job = $consumer->reserveWithTimeout(1)) !== null) {
    $body = $job->getData();
    if (str_ends_with($body, '-4') && !isset($released[$body])) {
        $released[$body] = true;
        $consumer->release($job, 5, 0);
        continue;
    }
    if (str_ends_with($body, '-7')) {
        $consumer->bury($job);
        continue;
    }
    $consumer->touch($job);
    $consumer->delete($job);
    $done[$body] = true;
}
check(count($released) == 2, 'two jobs released and reserved again');
foreach ($tubes as $tube) {
    $producer->useTube($tube);
    $buried = $producer->peekBuried();
    check($buried !== null && $buried->getData() === "$tube-7", "peek-buried in $tube");
    check($producer->kick(10) === 1, "kick one buried job in $tube");
}
while (($job = $consumer->reserveWithTimeout(1)) !== null) {
    $stats = $consumer->statsJob($job);
    check($stats['kicks'] == 1 && $stats['buries'] == 1, 'kicked job counts one bury and one kick');
    $consumer->delete($job);
    $done[$job->getData()] = true;
}
check(count($done) === 20, 'all 20 jobs done, got ' . count($done));
echo "ok 20 jobs, 2 released, 2 buried and kicked\n";
