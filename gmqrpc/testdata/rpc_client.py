"""A gmq JSON-RPC client as gmq's Python users wrote them: stdlib socket and
json, one JSON object per line. Usage: python3 rpc_client.py HOST PORT.
It pushes, pops in topic order, acks, and checks the errors; it prints
"ok ..." and exits 0, or says what failed and exits 1."""
import json
import socket
import sys


class Client:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.file = self.sock.makefile("r", encoding="utf-8")
        self.next_id = 0

    def call(self, method, param):
        self.next_id += 1
        request = {"method": method, "params": [param], "id": self.next_id}
        self.sock.sendall((json.dumps(request) + "\n").encode("utf-8"))
        reply = json.loads(self.file.readline())
        if reply["id"] != self.next_id:
            raise AssertionError("reply id %r for request %d" % (reply["id"], self.next_id))
        return reply["result"], reply["error"]


def check(cond, what):
    if not cond:
        print("failed: " + what, file=sys.stderr)
        sys.exit(1)


def main():
    c = Client(sys.argv[1], int(sys.argv[2]))
    result, err = c.call("Service.Push", {"id": "py_order_1", "topic": "py_low", "body": "low", "delay": "0", "TTR": "30"})
    check(result == "success" and err is None, "push: %r %r" % (result, err))
    result, err = c.call("Service.Push", {"id": "py_order_2", "topic": "py_high", "body": "high", "delay": 0, "TTR": 30})
    check(result == "success" and err is None, "push with numbers: %r %r" % (result, err))
    result, err = c.call("Service.Push", {"id": "py_order_1", "topic": "py_low", "body": "again"})
    check(err is not None and "already" in err, "duplicate id refused: %r" % err)
    result, err = c.call("Service.Push", {"topic": "bad topic", "body": "x"})
    check(err is not None and "topic" in err, "bad topic refused: %r" % err)

    job, err = c.call("Service.Pop", ["py_high", "py_low"])
    check(err is None and job["id"] == "py_order_2" and job["body"] == "high", "pop in topic order: %r %r" % (job, err))
    check(job["TTR"] == "30" and job["delay"] == "0" and job["topic"] == "py_high", "string fields: %r" % job)
    result, err = c.call("Service.Ack", job["id"])
    check(result == "success" and err is None, "ack: %r %r" % (result, err))
    result, err = c.call("Service.Ack", job["id"])
    check(err is not None, "second ack refused")

    job, err = c.call("Service.Pop", ["py_high", "py_low"])
    check(err is None and job["id"] == "py_order_1", "pop the other: %r %r" % (job, err))
    c.call("Service.Ack", job["id"])
    job, err = c.call("Service.Pop", ["py_high", "py_low"])
    check(job is None and err == "empty", "empty after a short wait: %r %r" % (job, err))
    print("ok python: push, pop in topic order, ack, errors")


if __name__ == "__main__":
    main()
