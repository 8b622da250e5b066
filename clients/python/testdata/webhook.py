"""Webhook signatures (HTTP push delivery) through the installed Python
client, no broker: verify_webhook on the Standard Webhooks spec's vector and
on what gmq sends (rotation, the tolerance's bounds, tampering, bad secrets,
missing headers, other versions, names in any case), then the README's
receiver, served on a free port and sent signed deliveries. Prints "ok"."""
import base64
import email.message
import hashlib
import hmac
import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer
from typing import Any, Dict, Optional, Tuple

import gmq_client
from gmq_client import GmqError, WebhookVerificationError, verify_webhook

# The spec's own example: passing it, a receiver checks what any Standard
# Webhooks sender signs.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID, STAMP, BODY = "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", b'{"test": 2432232314}'
SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
NOW = 1614265330
OTHER = "whsec_" + base64.b64encode(b"second-key-of-32-bytes----------").decode()


def sign(secret: str, msg_id: str, stamp: str, body: bytes) -> str:
    """What gmq sends: a v1 signature per key, space-separated (written here
    again, apart from the client, from the spec)."""
    sigs = []
    for s in secret.split():
        key = base64.b64decode(s[len("whsec_"):])
        mac = hmac.new(key, b"%s.%s.%s" % (msg_id.encode(), stamp.encode(), body), hashlib.sha256)
        sigs.append("v1," + base64.b64encode(mac.digest()).decode())
    return " ".join(sigs)


assert sign(SECRET, MSG_ID, STAMP, BODY) == SIG, sign(SECRET, MSG_ID, STAMP, BODY)
ROTATED = sign(SECRET + " " + OTHER, MSG_ID, STAMP, BODY)
OTHER_ONLY = sign(OTHER, MSG_ID, STAMP, BODY)
V2 = "v2," + SIG[3:]  # the right bytes under another version: ignored


def headers(**changes: Optional[str]) -> Dict[str, str]:
    """The spec's delivery's headers, with changes (None: left out)."""
    h = {"webhook-id": MSG_ID, "webhook-timestamp": STAMP, "webhook-signature": SIG}
    for name, value in changes.items():
        name = name.replace("_", "-")
        if value is None:
            del h[name]
        else:
            h[name] = value
    return h


def message(h: Dict[str, str], *more: Tuple[str, str]) -> email.message.Message:
    """h as http.server's self.headers holds it, and more fields (a name
    again is a field of its own, as a request can send)."""
    m = email.message.Message()
    for k, v in list(h.items()) + list(more):
        m[k] = v
    return m


PASS, REFUSED, BAD_SECRET = "pass", "refused", "bad secret"
cases = [
    ("the spec's vector", SECRET, headers(), BODY, NOW, PASS),
    ("the body as a str", SECRET, headers(), BODY.decode(), NOW, PASS),
    ("the body as a bytearray", SECRET, headers(), bytearray(BODY), NOW, PASS),
    # Rotation: signed with both keys, checked with either; checked with
    # both, signed with either.
    ("signed with two, checked with the first", SECRET, headers(webhook_signature=ROTATED), BODY, NOW, PASS),
    ("signed with two, checked with the second", OTHER, headers(webhook_signature=ROTATED), BODY, NOW, PASS),
    ("signed with the old, checked with both", OTHER + " " + SECRET, headers(), BODY, NOW, PASS),
    ("signed with the new, checked with both", SECRET + "  " + OTHER, headers(webhook_signature=OTHER_ONLY), BODY, NOW, PASS),
    ("signed with another key only", SECRET, headers(webhook_signature=OTHER_ONLY), BODY, NOW, REFUSED),
    # The tolerance: 300 s either way passes, 301 s does not.
    ("300 s old", SECRET, headers(), BODY, NOW + 300, PASS),
    ("301 s old", SECRET, headers(), BODY, NOW + 301, REFUSED),
    ("300 s ahead", SECRET, headers(), BODY, NOW - 300, PASS),
    ("301 s ahead", SECRET, headers(), BODY, NOW - 301, REFUSED),
    ("300.5 s old", SECRET, headers(), BODY, NOW + 300.5, REFUSED),
    # What is signed: the body's bytes, the id, the timestamp.
    ("a body changed", SECRET, headers(), b'{"test": 2432232315}', NOW, REFUSED),
    ("a body re-encoded", SECRET, headers(), b'{"test":2432232314}', NOW, REFUSED),
    ("an id changed", SECRET, headers(webhook_id=MSG_ID + "x"), BODY, NOW, REFUSED),
    ("a timestamp changed", SECRET, headers(webhook_timestamp="1614265331"), BODY, NOW, REFUSED),
    ("a signature changed", SECRET, headers(webhook_signature=SIG.replace("g0h", "g0i")), BODY, NOW, REFUSED),
    ("a signature without its version", SECRET, headers(webhook_signature=SIG[3:]), BODY, NOW, REFUSED),
    ("a timestamp with a fraction", SECRET, headers(webhook_timestamp=STAMP + ".0"), BODY, NOW, REFUSED),
    ("a timestamp with a sign", SECRET, headers(webhook_timestamp="+" + STAMP), BODY, NOW, REFUSED),
    ("a timestamp with an underscore", SECRET, headers(webhook_timestamp="1_614_265_330"), BODY, NOW, REFUSED),
    ("a timestamp in other digits", SECRET, headers(webhook_timestamp="\u0661\u0666\u0661\u0664"), BODY, NOW, REFUSED),
    ("a timestamp in words", SECRET, headers(webhook_timestamp="now"), BODY, NOW, REFUSED),
    ("no webhook-id", SECRET, headers(webhook_id=None), BODY, NOW, REFUSED),
    ("no webhook-timestamp", SECRET, headers(webhook_timestamp=None), BODY, NOW, REFUSED),
    ("no webhook-signature", SECRET, headers(webhook_signature=None), BODY, NOW, REFUSED),
    ("an empty webhook-signature", SECRET, headers(webhook_signature=""), BODY, NOW, REFUSED),
    ("no headers at all", SECRET, {}, BODY, NOW, REFUSED),
    # Versions: only v1 counts; a v2 beside a good v1 is no harm.
    ("only a v2 signature", SECRET, headers(webhook_signature=V2), BODY, NOW, REFUSED),
    ("a v2 signature then a v1", SECRET, headers(webhook_signature=V2 + " " + SIG), BODY, NOW, PASS),
    ("a v1 signature then a v2", SECRET, headers(webhook_signature=SIG + " " + V2), BODY, NOW, PASS),
    ("a v1 signature among junk", SECRET, headers(webhook_signature="v1,AAAA v1, , v1a,x " + SIG), BODY, NOW, PASS),
    ("two signatures joined with a comma", SECRET, headers(webhook_signature=OTHER_ONLY + ", " + SIG), BODY, NOW, PASS),
    # Header names in any case, in a dict or as http.server gives them.
    ("upper-case names", SECRET, {k.upper(): v for k, v in headers().items()}, BODY, NOW, PASS),
    ("title-case names", SECRET, {k.title(): v for k, v in headers().items()}, BODY, NOW, PASS),
    ("an email.message.Message", SECRET, message(headers()), BODY, NOW, PASS),
    ("a Message with two signature fields", SECRET,
     message(headers(webhook_signature=OTHER_ONLY), ("Webhook-Signature", SIG)), BODY, NOW, PASS),
    ("a list of values", SECRET, dict(headers(), **{"webhook-signature": [OTHER_ONLY, SIG]}), BODY, NOW, PASS),
    ("bytes names and values", SECRET, {k.encode(): v.encode() for k, v in headers().items()}, BODY, NOW, PASS),
    # The caller's errors: a ValueError, not a refusal of the request.
    ("a secret without whsec_", SECRET[len("whsec_"):], headers(), BODY, NOW, BAD_SECRET),
    ("a secret not base64", "whsec_not*base64", headers(), BODY, NOW, BAD_SECRET),
    ("a secret without its padding", OTHER.rstrip("="), headers(), BODY, NOW, BAD_SECRET),
    ("an empty key", "whsec_", headers(), BODY, NOW, BAD_SECRET),
    ("no secret", " ", headers(), BODY, NOW, BAD_SECRET),
    ("a good secret and a bad one", SECRET + " whsec_!!", headers(), BODY, NOW, BAD_SECRET),
    ("a bad secret and no headers", SECRET[len("whsec_"):], {}, BODY, NOW, BAD_SECRET),
]
for name, secret, h, body, now, want in cases:
    try:
        verify_webhook(secret, h, body, now=now)
        got = PASS
    except WebhookVerificationError as e:
        got = REFUSED
        assert str(e).startswith("gmq webhook: "), e
    except ValueError as e:
        got = BAD_SECRET
        assert "secret" in str(e), e
    assert got == want, (name, got, want)

# The tolerance is a parameter: 0 takes only the very second, a negative
# one is the caller's error; the default is the clock's now, by which the
# spec's vector (2021) is long expired.
verify_webhook(SECRET, headers(), BODY, tolerance=0, now=NOW)
verify_webhook(SECRET, headers(), BODY, tolerance=7200, now=NOW + 3600)
for now, tolerance in ((NOW + 1, 0), (NOW + 3601, 3600)):
    try:
        verify_webhook(SECRET, headers(), BODY, tolerance=tolerance, now=now)
        raise AssertionError("passed %d s off with a tolerance of %d" % (now - NOW, tolerance))
    except WebhookVerificationError as e:
        assert "tolerance" in str(e), e
try:
    verify_webhook(SECRET, headers(), BODY, tolerance=-1, now=NOW)
    raise AssertionError("a negative tolerance passed")
except ValueError:
    pass
try:
    verify_webhook(SECRET, headers(), BODY)
    raise AssertionError("the spec's vector passed today")
except WebhookVerificationError as e:
    assert "tolerance" in str(e), e
assert not issubclass(WebhookVerificationError, GmqError)  # not an answer from gmq
assert "verify_webhook" in gmq_client.__all__ and "WebhookVerificationError" in gmq_client.__all__

# The README's receiver, as it is: served on a free port, sent deliveries
# signed now. Its work is run as written (its print caught), then stood in
# for to say "busy" and to fail.
readme = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md"), encoding="utf-8").read()
found = re.search(r"<!-- receiver -->\s*```python\n(.*?)```", readme, re.S)
assert found, "README.md has no receiver block"
os.environ["GMQ_WEBHOOK_SECRET"] = OTHER + " " + SECRET  # while rotating
receiver: Dict[str, Any] = {"__name__": "receiver"}
exec(compile(found.group(1), "README.md receiver", "exec"), receiver)
printed = []
receiver["print"] = lambda *args, **kwargs: printed.append(" ".join(str(a) for a in args))


class Quiet(receiver["Receiver"]):  # type: ignore[misc, valid-type]
    def log_message(self, *args: Any) -> None:
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = "http://127.0.0.1:%d/jobs" % server.server_address[1]


def deliver(body: bytes, secret: str = SECRET, sent: Optional[bytes] = None, **changes: str) -> Any:
    """POSTs body as gmq would, signed now with secret (then sent instead of
    it, and changes to the headers, after signing): (status, Retry-After,
    the answer decoded)."""
    stamp = str(int(time.time()))
    h = {"Content-Type": "application/json", "webhook-id": "order-7", "webhook-timestamp": stamp,
         "webhook-signature": sign(secret, "order-7", stamp, body), "gmq-topic": "orders", "gmq-attempt": "1",
         "gmq-failures": "0"}
    h.update({k.replace("_", "-"): v for k, v in changes.items()})
    req = urllib.request.Request(url, data=body if sent is None else sent, headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers.get("Retry-After"), json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Retry-After"), json.loads(e.read())


job = json.dumps({"id": "order-7", "internal_id": 7, "topic": "orders", "body": {"sku": "A1"}, "attempt": 1,
                  "failures": 0, "priority": 1024, "ttr": 60, "created": "2026-01-01T00:00:00Z", "token": "t"}).encode()
assert deliver(job) == (200, None, {"done": "order-7"}), deliver(job)
assert printed == ["job order-7 of orders, attempt 1: {'sku': 'A1'}"], printed
assert deliver(job, secret=OTHER)[0] == 200  # the other key of the two
status, _, answer = deliver(job, sent=job.replace(b"A1", b"A2"))  # tampered
assert status == 401 and "no v1 signature matches" in answer["error"], (status, answer)
status, _, answer = deliver(job, webhook_timestamp=str(int(time.time()) - 301))  # moved back: refused
assert status == 401, (status, answer)
assert deliver(job, secret="whsec_" + base64.b64encode(b"not-the-topic-secret-16").decode())[0] == 401


def busy(job: Any) -> Any:
    raise receiver["Busy"]("the printer is out of paper")


def broken(job: Any) -> Any:
    raise KeyError("sku")


receiver["work"] = busy
assert deliver(job) == (503, "30", {"error": "the printer is out of paper"}), deliver(job)
receiver["work"] = broken
assert deliver(job) == (500, None, {"error": "KeyError('sku')"}), deliver(job)
server.shutdown()
print("ok")
