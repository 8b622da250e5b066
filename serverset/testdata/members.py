"""List a gmq server set's members with kazoo, as a client of its own would.

Usage: members.py HOSTS PATH_PREFIX

For every line read on stdin it prints one line of JSON:
{"write": [MEMBER...], "read": [MEMBER...]}, each MEMBER
{"name": "member_0000000001", "owner": SESSION, "data": "<the znode's data>"},
or {"error": "..."} while ZooKeeper cannot be read (kazoo reconnects).
"""

import json
import logging
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError


def members(zk, path):
    try:
        names = zk.get_children(path)
    except NoNodeError:
        return []
    out = []
    for name in sorted(names):
        try:
            data, stat = zk.get(path + "/" + name)
        except NoNodeError:
            continue  # left while we looked
        out.append({"name": name, "owner": stat.ephemeralOwner, "data": data.decode("utf-8")})
    return out


def main():
    logging.basicConfig(level=logging.ERROR)
    hosts, prefix = sys.argv[1], sys.argv[2]
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=30)
    print(json.dumps({"ready": True}), flush=True)
    for _ in sys.stdin:
        try:
            answer = {"write": members(zk, prefix + "/write"), "read": members(zk, prefix + "/read")}
        except Exception as e:  # ConnectionLoss, SessionExpired... while ZooKeeper is away
            answer = {"error": repr(e)}
        print(json.dumps(answer), flush=True)
    zk.stop()
    zk.close()


if __name__ == "__main__":
    main()
