"""gmq's Python client: the HTTP API (Client), standard library only
(Python 3.8+).

    from gmq_client import Client
    c = Client("http://127.0.0.1:8000", token="...")  # token: the broker's [web] token, if set
    c.push("mail", "hello", delay=10, ttr=30)
    job = c.pop(["mail"], timeout=5)   # None when the time is up
    c.ack(job["id"], job["attempt"])
"""
from gmq_client.client import VERSION, Client, GmqError, Job

__all__ = ["Client", "GmqError", "Job"]
__version__ = VERSION
