<?php
// Kestrel's usage through php-memcached (Debian's php-memcached, libmemcached
// underneath): set, get with the reliable-read options as keys, binary data.
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
check($m->get("php/t=50") === false, "empty after close");
check(!$m->set("php", str_repeat("z", 70000)), "too large an item is not stored");
check($m->getResultCode() === Memcached::RES_NOTSTORED, "NOT_STORED for a too-large item");
echo "php-memcached: ok\n";
