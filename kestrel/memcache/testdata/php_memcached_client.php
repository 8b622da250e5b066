<?php
// Kestrel's usage through php-memcached (Debian's php-memcached, libmemcached
// underneath): set, get with the reliable-read options as keys, binary data,
// expiry, a full queue (phpfull: max_items = 1, set by the test) and fanout.
[$_, $host, $port] = $argv;
$m = new Memcached();
$m->setOption(Memcached::OPT_BINARY_PROTOCOL, false);
$m->setOption(Memcached::OPT_COMPRESSION, false);
$m->addServer($host, (int)$port);

function check($ok, $what) {
    if (!$ok) {
        fwrite(STDERR, "failed: $what\n");
        exit(1);
    }
}

check($m->set("php", "first"), "set");
check($m->set("php", "\x00\xffbinary\r\n"), "set binary");
check($m->get("php/peek") === "first", "peek");
check($m->get("php") === "first", "get");
check($m->get("php/open") === "\x00\xffbinary\r\n", "open");
check($m->get("php/close") === false, "close");
check($m->set("php", "again"), "set");
check($m->get("php/open") === "again", "open");
check($m->get("php/abort") === false, "abort");
check($m->get("php/open") === "again", "aborted: back at the head");
check($m->get("php/close") === false, "close");
check($m->get("php/t=50") === false, "empty after close");
check(!$m->set("php", str_repeat("z", 70000)), "too large an item is not stored");
check($m->getResultCode() === Memcached::RES_NOTSTORED, "NOT_STORED for a too-large item");

check($m->set("phpexp", "short-lived", 1), "set with an expiry");
check($m->set("phpexp", "kept"), "set");
usleep(1200000);
check($m->get("phpexp") === "kept", "expired items are never got");

check($m->set("phpfull", "one"), "set under max_items");
check(!$m->set("phpfull", "two"), "a full queue: NOT_STORED");
check($m->getResultCode() === Memcached::RES_NOTSTORED, "NOT_STORED for a full queue");

check($m->get("phpfan+a") === false, "a child is empty at first");
check($m->set("phpfan", "to all"), "set to the parent");
check($m->get("phpfan+a") === "to all", "fanout child");
echo "php-memcached: ok\n";
