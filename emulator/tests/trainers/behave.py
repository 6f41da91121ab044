"""A replica whose behaviour the test picks with arguments.

--sleep S         run for S seconds (the workload)
--child           also start a grandchild that runs as long (it must die with the job)
--daemon          also start a daemon that runs as long: fork, setsid, fork again (it leaves the
                  replica's process group and session, and its parent exits: it must die too)
--exit N          exit with status N
--say TEXT        print TEXT lines before exiting
--fail-once PATH  exit 2 the first time (creating PATH), succeed afterwards
--pidfile PATH    write "<pid> <pgid>" lines (self and grandchild) to PATH
--sleep-once PATH sleep only the first time (creating PATH); later runs exit at once
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--child", action="store_true")
p.add_argument("--daemon", action="store_true")
p.add_argument("--exit", type=int, default=0)
p.add_argument("--say", action="append", default=[])
p.add_argument("--fail-once")
p.add_argument("--pidfile")
p.add_argument("--sleep-once")
a, _unknown = p.parse_known_args()  # tuning trials append --<param>=<value> to every pool

pids = [os.getpid()]
if a.child:
    child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({a.sleep})"])
    pids.append(child.pid)
if a.daemon:
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, f"{os.getpid()}\n".encode())
            time.sleep(a.sleep)
            os._exit(0)
        os._exit(0)
    os.close(w)
    pids.append(int(os.fdopen(r).readline()))
if a.pidfile:
    with open(a.pidfile, "a") as fh:
        fh.write("".join(f"{pid} {os.getpgid(pid)}\n" for pid in pids))
for line in a.say:
    print(line, flush=True)
if a.fail_once:
    if not os.path.exists(a.fail_once):
        open(a.fail_once, "w").close()
        print("first run: failing on purpose", flush=True)
        sys.exit(2)
    print("second run: fine", flush=True)
if a.sleep_once:
    if os.path.exists(a.sleep_once):
        print("run again: done at once", flush=True)
        sys.exit(a.exit)
    open(a.sleep_once, "w").close()
time.sleep(a.sleep)
sys.exit(a.exit)
