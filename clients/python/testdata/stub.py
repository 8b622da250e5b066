"""A stub of the broker for the client's tests: an http.server on a free
port of 127.0.0.1 that answers each request with the next scripted answer
and keeps the requests. An answer is (status, JSON body or None, headers),
or a function returning one, called when the request comes (it may wait)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple, Union, cast

Reply = Tuple[int, Optional[Dict[str, Any]], Dict[str, str]]
Answer = Union[Reply, Callable[[], Reply]]

DOWN = {"error": "redis is unreachable"}  # a 503's body
NOW = {"Retry-After": "0"}  # a 503's header, for tests that need not wait


class Stub(ThreadingHTTPServer):
    """Serves from a thread of its own until shutdown()."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers: List[Answer] = []
        self.requests: List[Dict[str, Any]] = []
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.server_address[1]


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        stub = cast(Stub, self.server)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else {}
        stub.requests.append({"method": self.command, "path": self.path, "body": body,
                              "auth": self.headers.get("Authorization")})
        answer = stub.answers.pop(0)
        status, reply, headers = answer() if callable(answer) else answer
        data = json.dumps(reply).encode() if reply is not None else b""
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_DELETE = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        pass
