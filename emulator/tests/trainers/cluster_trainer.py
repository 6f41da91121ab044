"""A replica of a distributed job that really talks to its peers over the CLUSTER_SPEC addresses.

Roles by CLUSTER_SPEC task type: the parameter server (workerpool2) listens and acknowledges every
peer's hello; workers (workerpool1) listen for the chief and say hello to the PS; the chief
(workerpool0) says hello to the PS and to every worker; the evaluator (workerpool3) says hello to the
PS. Each replica records its environment and the replies it got in $RECORD_DIR/<key>.json.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

spec = json.loads(os.environ["CLUSTER_SPEC"])
task = spec["task"]
key = f"{task['type']}-{task['index']}"
cluster = spec["cluster"]
me = cluster[task["type"]][task["index"]]


def split(addr: str) -> tuple[str, int]:
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def listen(addr: str) -> socket.socket:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(split(addr))
    srv.listen(16)
    return srv


def serve(srv: socket.socket, count: int) -> list[str]:
    got = []
    for _ in range(count):
        conn, _ = srv.accept()
        with conn:
            line = conn.makefile("r").readline().strip()
            got.append(line)
            conn.sendall(f"ack {line} from {key}\n".encode())
    return got


def hello(addr: str) -> str:
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(split(addr), timeout=5) as conn:
                conn.sendall(f"{key}\n".encode())
                return conn.makefile("r").readline().strip()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


record = {
    "key": key,
    "CLUSTER_SPEC": spec,
    "TF_CONFIG": json.loads(os.environ["TF_CONFIG"]) if "TF_CONFIG" in os.environ else None,
    "env": dict(os.environ),
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
}
peers_of_ps = sum(len(cluster.get(p, [])) for p in ("workerpool0", "workerpool1", "workerpool3"))
if task["type"] == "workerpool2":
    srv = listen(me)
    record["heard"] = serve(srv, peers_of_ps)
elif task["type"] == "workerpool1":
    srv = listen(me)
    record["replies"] = [hello(cluster["workerpool2"][0])]
    record["heard"] = serve(srv, 1)
elif task["type"] == "workerpool0":
    record["replies"] = [hello(a) for a in [*cluster.get("workerpool2", []), *cluster.get("workerpool1", [])]]
else:
    record["replies"] = [hello(a) for a in cluster.get("workerpool2", [])]

if task["type"] == "workerpool0":
    # the job ends when the primary exits: wait until every other replica has recorded its run
    others = [f"{p}-{i}" for p, addrs in cluster.items() for i in range(len(addrs)) if f"{p}-{i}" != key]
    deadline = time.monotonic() + 30
    while not all(os.path.exists(os.path.join(os.environ["RECORD_DIR"], f"{o}.json")) for o in others):
        if time.monotonic() > deadline:
            sys.exit(f"peers never finished: {others}")
        time.sleep(0.02)

out = os.path.join(os.environ["RECORD_DIR"], f"{key}.json")
with open(out + ".tmp", "w") as fh:
    json.dump(record, fh)
os.replace(out + ".tmp", out)
print(f"{key} done", flush=True)
if task["type"] == "workerpool2":
    srv.accept()  # a parameter server serves until the job stops it
