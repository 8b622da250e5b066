<?php
// The package's classes without Composer, for a checkout of gmq:
//   require 'clients/php/autoload.php';
//   $gmq = new Gmq\Client('http://127.0.0.1:8000');
// In a Composer project, vendor/autoload.php does this (PSR-4, Gmq\ -> src/).

spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Gmq\\')) {
        $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, 4)) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
