<?php

declare(strict_types=1);

namespace Gmq;

/**
 * This client's release, semantic versioning: composer.json's version, and
 * gmq's CHANGELOG.md names each release (gmq's version_test.go checks they
 * agree).
 */
final class Version
{
    public const VERSION = '0.1.0';
}
