<?php
// The client's name before it became the gmq/client package, kept for code
// that requires this file:
//
//   require 'GmqClient.php';
//   $c = new GmqClient('http://127.0.0.1:8000');   // (base, timeout) as before
//   $c->push('mail', 'hello', delay: 10, ttr: 30);
//
// GmqClient is Gmq\Client and GmqException is Gmq\GmqException: the same
// methods, arguments and errors, with the token, retries and worker added
// (see README.md). New code: Composer's autoloader and Gmq\Client.

if (!class_exists(Gmq\Client::class)) { // not already loaded by Composer's autoloader
    require_once __DIR__ . '/autoload.php';
}
if (!class_exists('GmqClient', false)) { // this file may be required twice
    class_alias(Gmq\Client::class, 'GmqClient');
    class_alias(Gmq\GmqException::class, 'GmqException');
}
