"""Drives every call of gmq's kestrel Thrift port with Apache Thrift's
Python library (Debian's python3-thrift), framed transport and binary
protocol, as kestrel's clients speak it.

Usage: client.py GEN_DIR HOST PORT, where GEN_DIR holds the code
`thrift --gen py kestrel.thrift` made. Prints "ok", or fails with the
check that did not hold.
"""
import sys
import time

sys.path.insert(0, sys.argv[1])

from thrift.Thrift import TApplicationException
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from kestrel import Kestrel
from kestrel.ttypes import Status

HOST, PORT = sys.argv[2], int(sys.argv[3])


def connect():
    sock = TSocket.TSocket(HOST, PORT)
    sock.setTimeout(60000)
    transport = TTransport.TFramedTransport(sock)
    transport.open()
    return transport, Kestrel.Client(TBinaryProtocol.TBinaryProtocol(transport))


def check(what, got, want):
    if got != want:
        sys.exit("%s: got %r, want %r" % (what, got, want))


def refused(what, call, kind):
    try:
        call()
    except TApplicationException as e:
        if kind not in e.message:
            sys.exit("%s: refused with %r, want %r in it" % (what, e.message, kind))
        return
    sys.exit("%s: not refused" % what)


def status(client, want):
    deadline = time.time() + 60
    while client.current_status() != want:
        if time.time() > deadline:
            sys.exit("status: never %r" % want)
        time.sleep(0.05)


first, c = connect()
check("get_version", c.get_version(), "test")
check("current_status", c.current_status(), Status.UP)
check("put", c.put("py", [b"one", b"two", b"three"], 0), 3)
info = c.peek("py")
check("peek", (info.head_item, info.items, info.bytes, info.open_transactions), (b"one", 3, 11, 0))

items = c.get("py", 1, 0, 0)
check("plain get", [(i.data, i.id) for i in items], [(b"one", 0)])

opened = c.get("py", 1, 0, 60000)
check("reliable get", [i.data for i in opened], [b"two"])
check("open_transactions", c.peek("py").open_transactions, 1)
first.close()  # the read outlives its connection

second, c = connect()
check("confirm from another connection", c.confirm("py", {opened[0].id}), 1)
check("confirm again", c.confirm("py", {opened[0].id}), 0)

old = c.get("py", 1, 0, 60000)
check("reliable get", [i.data for i in old], [b"three"])
check("abort", c.abort("py", {old[0].id}), 1)
again = c.get("py", 1, 0, 60000)
check("read again", [i.data for i in again], [b"three"])
check("a new delivery's id", again[0].id != old[0].id, True)
check("confirm of the old delivery", c.confirm("py", {old[0].id}), 0)
check("confirm of the new", c.confirm("py", {again[0].id}), 1)

blob = bytes(range(256)) * 4
check("put binary", c.put("bin", [blob, b""], 60000), 2)
check("get binary", [i.data for i in c.get("bin", 5, 0, 0)], [blob, b""])

started = time.time()
check("get that waits", c.get("none", 1, 300, 0), [])
check("it waited", time.time() - started >= 0.25, True)

c.set_status(Status.READ_ONLY, None)  # no field 2, as kestrel's IDL sends: the fleet's
status(c, Status.READ_ONLY)
refused("put while read-only", lambda: c.put("py", [b"x"], 0), "draining: ")
c.set_status(Status.UP, "")
c.set_status(Status.QUIESCENT, "this")
status(c, Status.QUIESCENT)
refused("get while quiescent", lambda: c.get("py", 1, 0, 0), "draining: ")
c.set_status(Status.UP, "this")
status(c, Status.UP)
refused("set_status NOT_CONFIGURED", lambda: c.set_status(Status.NOT_CONFIGURED, ""), "invalid: ")

check("put", c.put("f", [b"a"], 0), 1)
c.flush_queue("f")
check("after flush_queue", c.peek("f").items, 0)
check("put", c.put("d", [b"a"], 0), 1)
c.delete_queue("d")
check("after delete_queue", c.get("d", 1, 0, 0), [])
check("put", c.put("all", [b"a"], 0), 1)
c.flush_all_queues()
check("after flush_all_queues", c.get("all", 1, 0, 0), [])
second.close()
print("ok")
