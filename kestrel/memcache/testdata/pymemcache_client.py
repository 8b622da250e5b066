"""Kestrel's usage through a real memcache client (Debian's python3-pymemcache):
set, get, the reliable-read options as keys, binary data, expiry, a full
queue (the test configures pyfull with max_items = 1) and fanout."""
import sys
import time

from pymemcache.client.base import Client

host, port = sys.argv[1], int(sys.argv[2])
c = Client((host, port), connect_timeout=2, timeout=5)

assert c.set("py", b"first", noreply=False)
assert c.set("py", b"\x00\xffbinary\r\n", noreply=False)
assert c.get("py/peek") == b"first", "peek"
assert c.get("py") == b"first", "get"
assert c.get("py/open") == b"\x00\xffbinary\r\n", "open"
assert c.get("py/close") is None, "close"
assert c.set("py", b"again", noreply=False)
assert c.get("py/open") == b"again", "open"
assert c.get("py/abort") is None, "abort"
assert c.get("py/open") == b"again", "aborted: back at the head"
assert c.get("py/close") is None, "close"
assert c.get("py/t=50") is None, "empty after close"
big = b"z" * 70000  # over [jobs] max_body (64 KiB): kestrel's NOT_STORED
assert not c.set("py", big, noreply=False), "too large an item"
assert c.get("py") is None

assert c.set("pyexp", b"short-lived", expire=1, noreply=False)
assert c.set("pyexp", b"past", expire=int(time.time()) - 5, noreply=False)  # an absolute time
assert c.set("pyexp", b"kept", noreply=False)
time.sleep(1.2)
assert c.get("pyexp") == b"kept", "expired items are never got"

assert c.set("pyfull", b"one", noreply=False)
assert not c.set("pyfull", b"two", noreply=False), "a full queue: NOT_STORED"

assert c.get("pyfan+a") is None  # a reference: the child starts getting copies
assert c.set("pyfan", b"to all", noreply=False)
assert c.get("pyfan+a") == b"to all", "fanout child"
assert c.get("pyfan") == b"to all", "the parent keeps its copy"
# pymemcache's defaults send noreply on set and delete: no answer comes, and
# the next command's answer is its own.
nr = Client((host, port), connect_timeout=2, timeout=5)
assert nr.set("pynr", b"quiet")
assert nr.get("pynr") == b"quiet", "a get after a noreply set"
nr.delete("pynr")
assert nr.get("pynr/t=10") is None
print("pymemcache: ok")
