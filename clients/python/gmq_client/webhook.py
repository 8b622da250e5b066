"""Checking a webhook's signature, for HTTP push delivery (gmq's
docs/workflows.md, "HTTP push delivery"): a topic with deliver_to POSTs each
of its jobs to that URL, the body the job as JSON, signed with the topic's
deliver_secret in the Standard Webhooks form (https://www.standardwebhooks.com):

    webhook-id:        the job's number (never reused; gmq-job-id has its id)
    webhook-timestamp: Unix seconds, when the request was made
    webhook-signature: "v1,<base64 of HMAC-SHA256(key, id.timestamp.body)>"
                       (two, space-separated, while the secret is rotated)

A receiver checks the signature before it trusts the body: anyone who can
reach its URL could otherwise make it do a job. The timestamp is signed too,
so a recorded request is refused once it is older than the tolerance."""
import base64
import hashlib
import hmac
import re
import time
from typing import Any, Dict, List, Optional, Union

__all__ = ["WebhookVerificationError", "verify_webhook"]

SECRET_PREFIX = "whsec_"
TOLERANCE = 300  # seconds either way, as Standard Webhooks advises

# The standard base64 alphabet, with its padding (what the broker sends);
# base64.b64decode alone would take some text that is not.
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_DIGITS = re.compile(r"[0-9]+")  # not \d, which takes other scripts' digits


class WebhookVerificationError(Exception):
    """A delivery refused: a header missing, a timestamp that is not a whole
    number or is too far from now, no signature that matches. Answer such a
    request with a 4xx and do no work. (Not a GmqError, which is an answer
    from gmq: here gmq is the caller. A secret that is not one is a
    ValueError: the receiver is set up wrong, not the request.)"""


def verify_webhook(secret: str, headers: Any, body: Union[bytes, bytearray, memoryview, str], *,
                   tolerance: float = TOLERANCE, now: Optional[float] = None) -> None:
    """Checks a delivery's signature: returns when one of its v1 signatures
    is body's under one of secret's keys, and raises WebhookVerificationError
    otherwise.

    secret is the topic's deliver_secret ("whsec_" and base64), or two of
    them space-separated while it is rotated: a delivery signed with either
    passes. headers is the request's, any mapping or http.server's
    self.headers (names in any case). body is the raw bytes read from the
    request, before any JSON decoding (a str is taken as its UTF-8). now is
    a Unix time in seconds (default: time.time()); the timestamp may be up to
    tolerance seconds from it, before or after (the bound itself passes).
    Signatures of versions other than v1 are ignored, as Standard Webhooks
    says. A bad secret (or a negative tolerance) raises ValueError."""
    keys = _keys(secret)
    if tolerance < 0:
        raise ValueError("gmq webhook: tolerance is a number of seconds, 0 or more, not %r" % (tolerance,))
    fields = _fields(headers)
    msg_id = _header(fields, "webhook-id")
    stamp = _header(fields, "webhook-timestamp")
    signatures = _header(fields, "webhook-signature")
    if not _DIGITS.fullmatch(stamp):
        raise WebhookVerificationError("gmq webhook: webhook-timestamp %r is not a whole number of seconds" % stamp)
    now = time.time() if now is None else now
    off = now - int(stamp)
    # Both ways: a timestamp ahead of now would stretch a replay's window.
    if abs(off) > tolerance:
        raise WebhookVerificationError("gmq webhook: its timestamp %s is %d s from now, past the tolerance of %s s"
                                       % (stamp, round(off), tolerance))
    data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    signed = ("%s.%s." % (msg_id, stamp)).encode("utf-8") + data
    want = [base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()) for key in keys]
    # Every pair is compared, each in constant time: how long it takes says
    # nothing of how much of a signature was right.
    matched = False
    for field in signatures.split():
        # A signature header sent twice may come joined with ", ".
        version, _, sig = field.rstrip(",").partition(",")
        if version != "v1" or not sig:
            continue
        for w in want:
            if hmac.compare_digest(sig.encode("utf-8"), w):
                matched = True
    if not matched:
        raise WebhookVerificationError("gmq webhook: no v1 signature matches the secret")


def _keys(secret: str) -> List[bytes]:
    """secret's keys: the decoded bytes after "whsec_", never the text."""
    if not isinstance(secret, str):
        raise ValueError("gmq webhook: the secret is a str, whsec_ followed by base64, not %s" % type(secret).__name__)
    keys = []
    for i, s in enumerate(secret.split(), 1):
        if not s.startswith(SECRET_PREFIX):
            raise ValueError("gmq webhook: secret %d does not start with %r: give the topic's deliver_secret as it "
                             "is, %s followed by base64" % (i, SECRET_PREFIX, SECRET_PREFIX))
        encoded = s[len(SECRET_PREFIX):]
        if not encoded or not _BASE64.fullmatch(encoded):
            raise ValueError("gmq webhook: secret %d is not %s followed by the standard base64 (with padding) of "
                             "its key" % (i, SECRET_PREFIX))
        keys.append(base64.b64decode(encoded))
    if not keys:
        raise ValueError("gmq webhook: no secret: give the topic's deliver_secret (whsec_...), or two "
                         "space-separated while rotating")
    return keys


def _fields(headers: Any) -> Dict[str, List[str]]:
    """headers' fields by their lower-case names, every value of each: a
    dict's, a case-insensitive mapping's, an email.message.Message's
    (http.server's self.headers, which may hold a name twice)."""
    items = headers.items() if hasattr(headers, "items") else headers
    fields: Dict[str, List[str]] = {}
    for name, value in items:
        if isinstance(name, bytes):
            name = name.decode("latin-1")
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            fields.setdefault(str(name).lower(), []).append(v.decode("latin-1") if isinstance(v, bytes) else str(v))
    return fields


def _header(fields: Dict[str, List[str]], name: str) -> str:
    """A header's values, space-separated; refused when there is none."""
    value = " ".join(fields.get(name, [])).strip()
    if not value:
        raise WebhookVerificationError("gmq webhook: no %s header" % name)
    return value
