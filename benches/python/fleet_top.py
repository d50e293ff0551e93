#!/usr/bin/env python3
"""Benchmark of `ubunye top` over a fleet, on fleet_metrics.py's
tree (10 use cases of 10,000 batches, built once and cached):

  baseline      ubunye metrics --find ROOT (one full count of every use case)
  all counted   top --find ROOT --interval 1s started in tmux until every row
                has its counts
  idle CPU      the top process's CPU over --idle seconds, nothing changing
  change        a new lease written (a write and a rename, as the engine
                saves) in one use case, until its row's BATCHES moves (--changes
                times, round the use cases; each bounded by 15 s)
  memory        the top process's peak resident set (VmHWM)

Usage:

  cargo build --release
  python3 benches/python/fleet_top.py [--changes 20] [--idle 20]
"""

import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet_metrics import fleet  # noqa: E402
from state_scan import ROOT, best  # noqa: E402


def tmux(sock, *args):
    return subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", *args], check=True, capture_output=True,
                          text=True).stdout


def batches(pane, uc):
    """The BATCHES cell of the row of `uc`, or None."""
    for line in pane.splitlines():
        words = line.split()
        if len(words) > 1 and words[0] == uc and words[1].isdigit():
            return int(words[1])
    return None


def cpu_ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--use-cases", type=int, default=10)
    ap.add_argument("--batches", type=int, default=10_000, help="batches per use case")
    ap.add_argument("--changes", type=int, default=20)
    ap.add_argument("--idle", type=float, default=20.0, help="seconds of idle CPU measured")
    ap.add_argument("--dir", help="the cache folder (default /tmp/ubunye-bench-fleet-<N>x<B>)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/ubunye"))
    a = ap.parse_args()
    if not shutil.which("tmux"):
        sys.exit("tmux is needed")
    root, ucs = fleet(a)
    env = dict(os.environ, NO_COLOR="1")
    base = best([a.bin, "metrics", "--find", root], 3, env)
    print(f"baseline: metrics --find (a full count of all) {base * 1000:8.0f} ms", flush=True)
    sock = f"ubunye-bench-fleet-{os.getpid()}"
    made = []
    try:
        t0 = time.perf_counter()
        tmux(sock, "new-session", "-d", "-s", "b", "-x", "200", "-y", "40",
             f"env NO_COLOR=1 {a.bin} top --find {root} --interval 1s")
        pid = int(tmux(sock, "list-panes", "-t", "b", "-F", "#{pane_pid}").split()[0])
        until = time.perf_counter() + 600
        while True:
            pane = tmux(sock, "capture-pane", "-p", "-t", "b")
            if all(batches(pane, uc) is not None for uc in ucs):
                break
            if time.perf_counter() > until:
                sys.exit(f"not every use case counted in 600 s:\n{pane}")
            time.sleep(0.02)
        counted = time.perf_counter() - t0
        print(f"all counted {counted * 1000:8.0f} ms   {counted / base:.2f}x the baseline", flush=True)
        time.sleep(3)
        ticks, t1 = cpu_ticks(pid), time.perf_counter()
        time.sleep(a.idle)
        idle = (cpu_ticks(pid) - ticks) / os.sysconf("SC_CLK_TCK") / (time.perf_counter() - t1)
        print(f"idle CPU over {a.idle:.0f} s: {idle * 100:.2f} % of one core (goal < 1 %)", flush=True)
        waits = []
        for i in range(a.changes):
            uc = ucs[i % len(ucs)]
            live = open(uc + ".live").read().split()[0]
            was = batches(tmux(sock, "capture-pane", "-p", "-t", "b"), uc)
            path = os.path.join(os.path.dirname(live), f"{0xbe00 + i:016x}.json")
            tmp = path + ".bench.tmp"
            shutil.copyfile(live, tmp)
            t = time.perf_counter()
            os.rename(tmp, path)
            made.append(path)
            until = t + 15
            while batches(tmux(sock, "capture-pane", "-p", "-t", "b"), uc) != was + 1:
                if time.perf_counter() > until:
                    sys.exit(f"change {i} not shown in 15 s")
                time.sleep(0.01)
            waits.append(time.perf_counter() - t)
            time.sleep(0.3)
        waits.sort()
        p = lambda q: waits[min(len(waits) - 1, int(q * len(waits)))] * 1000  # noqa: E731
        print(f"change -> frame, --interval 1s: p50 {p(0.5):.0f} ms, p95 {p(0.95):.0f} ms, max {waits[-1] * 1000:.0f} ms "
              f"({len(waits)} changes; goal < 1 s p95)", flush=True)
        hwm = [l for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM")][0].split()[1]
        print(f"peak resident: {int(hwm) / 1024:.0f} MB (goal < 400 at a million)", flush=True)
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
        for p in made:
            if os.path.exists(p):
                os.remove(p)


if __name__ == "__main__":
    main()
