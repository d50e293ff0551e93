#!/usr/bin/env python3
"""Benchmark of `ubunye metrics` over a fleet.

Builds (once, cached outside the checkout) ROOT holding 10 use cases of 10,000
batches each (state_scan.py's use case: leases in mixed states, finished
notes, the peer's real run records), then times, warm, best of N:

  floor    benches/floor/read_all.c over ROOT: every file opened and read once
  list     ubunye leases list --all --json --find ROOT > /dev/null
  metrics  ubunye metrics --find ROOT > /dev/null

and prints metrics beside the listing and the floor, with each one's peak
memory (GNU time's max RSS; goal for metrics < 100 MB). Usage:

  cargo build --release
  python3 benches/python/fleet_metrics.py [--use-cases 10] [--batches 10000] [--repeat 3]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from state_scan import HOST, ROOT, THIS, best, build, floor_bin, peak_rss_mb, write  # noqa: E402


def fleet(a):
    """Build (once) or reuse the fleet; make its live leases this process's.
    Returns the root and the use-case folders."""
    a.dir = a.dir or f"/tmp/ubunye-bench-fleet-{a.use_cases}x{a.batches}"
    if not os.path.exists(a.bin):
        sys.exit(f"{a.bin} is missing: run `cargo build --release` first")
    root = os.path.join(a.dir, "root")
    ucs = [os.path.join(root, f"team-{i % 3}", f"uc-{i:02d}") for i in range(a.use_cases)]
    stamp = os.path.join(a.dir, "built-v1")
    if not os.path.exists(stamp):
        shutil.rmtree(a.dir, ignore_errors=True)
        t = time.perf_counter()
        for uc in ucs:
            os.makedirs(uc)
            build(uc, a.batches, 1)
            # build() leaves its list of live leases beside the use case.
            os.rename(os.path.join(os.path.dirname(uc), "live-leases.txt"), uc + ".live")
        print(f"built {a.use_cases} use cases of {a.batches} batches in {time.perf_counter() - t:.0f} s", flush=True)
        write(stamp, "")
    else:
        print(f"using {root}; delete {a.dir} to rebuild", flush=True)
    now = time.time()
    for uc in ucs:
        for p in open(uc + ".live").read().split():
            doc = json.load(open(p))
            if doc.get("host") in (HOST, THIS):
                doc["host"], doc["pid"] = THIS, os.getpid()
            write(p, json.dumps(doc), now)
    return root, ucs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--use-cases", type=int, default=10)
    ap.add_argument("--batches", type=int, default=10_000, help="batches per use case")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", help="the cache folder (default /tmp/ubunye-bench-fleet-<N>x<B>)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/ubunye"))
    a = ap.parse_args()
    root, ucs = fleet(a)
    env = dict(os.environ, NO_COLOR="1")
    floor_cmd = [floor_bin(a), root]
    seen = subprocess.run(floor_cmd, check=True, capture_output=True, text=True).stdout.strip()
    print(f"{seen} under {root}; best of {a.repeat}, warm cache", flush=True)
    floor = best(floor_cmd, a.repeat)
    list_cmd = [a.bin, "leases", "list", "--all", "--json", "--find", root]
    metrics_cmd = [a.bin, "metrics", "--find", root]
    series = subprocess.run(metrics_cmd, env=env, check=True, capture_output=True, text=True).stdout
    lines = [l for l in series.splitlines() if l and not l.startswith("#")]
    print(f"metrics: {len(lines)} series", flush=True)
    lst = best(list_cmd, a.repeat, env)
    lst_rss = peak_rss_mb(list_cmd, env)
    met = best(metrics_cmd, a.repeat, env)
    met_rss = peak_rss_mb(metrics_cmd, env)
    print(f"floor (C: nftw, open + read every file once, one thread) {floor * 1000:8.0f} ms", flush=True)
    print(f"leases list --all --json --find {lst * 1000:8.0f} ms   {lst / floor:.2f}x the floor   peak RSS {lst_rss:.0f} MB",
          flush=True)
    print(f"metrics --find                  {met * 1000:8.0f} ms   {met / floor:.2f}x the floor   "
          f"{met / lst:.2f}x the listing   peak RSS {met_rss:.0f} MB (goal < 100)", flush=True)


if __name__ == "__main__":
    main()
