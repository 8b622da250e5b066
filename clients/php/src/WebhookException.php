<?php

declare(strict_types=1);

namespace Gmq;

/**
 * A webhook delivery refused by Webhook::verify: a header missing, a
 * timestamp that is not a whole number or is too far from now, no signature
 * that matches. Answer such a request with a 4xx and do no work.
 *
 * Not a GmqException, which is an answer from gmq (its $status is gmq's):
 * here gmq is the caller, and the request is what failed. A secret that is
 * not one is an \InvalidArgumentException instead: the receiver is set up
 * wrong, not the request.
 */
final class WebhookException extends \RuntimeException
{
}
