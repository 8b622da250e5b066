"""Kestrel's usage through a real memcache client (Debian's python3-pymemcache):
set, get, the reliable-read options as keys, and binary data."""
import sys

from pymemcache.client.base import Client

host, port = sys.argv[1], int(sys.argv[2])
c = Client((host, port), connect_timeout=2, timeout=5)

assert c.set("py", b"first", noreply=False)
assert c.set("py", b"\x00\xffbinary\r\n", noreply=False)
assert c.get("py/peek") == b"first", "peek"
assert c.get("py") == b"first", "get"
assert c.get("py/open") == b"\x00\xffbinary\r\n", "open"
assert c.get("py/close") is None, "close"
assert c.get("py/t=50") is None, "empty after close"
big = b"z" * 70000  # over [jobs] max_body (64 KiB): kestrel's NOT_STORED
assert not c.set("py", big, noreply=False), "too large an item"
assert c.get("py") is None
print("pymemcache: ok")
