#!/usr/bin/env python3
"""Benchmark of the state model on a big use case (issues 4 and 16).

Builds (once, cached outside the checkout) a synthetic use case: 1,000 batches
held by leases in mixed states (live, dead with claims, kept, committed, with
orphans, takeover marks and temp files), every other batch finished (a
finished note each), and a run record (the peer's real record, about 3 KB) for
every batch, spread over one task per 10,000 batches. Then times, warm, best
of N:

  floor    benches/floor/read_all.c: nftw, and every file opened and read
           once, on one thread (compiled with gcc into the cache folder)
  list     ubunye leases list --all --json -d UC > /dev/null
  explain  ubunye leases explain <key> -d UC (one dead batch; and a prefix): its
           index (outside the use case) cold, then warm, and off; against its
           own floor, benches/floor/stat_task.c: the batch's task's two folders
           listed and every entry stat'ed once, one thread (what an answer that
           may not be stale must at least do)
  doctor   ubunye doctor --json -d UC

and prints each against the floor, with its peak memory (GNU time's max RSS).
With --top it also runs the dashboard's benchmark on the same use case (one
`top` reading it in poll mode: its resident memory). Usage:

  cargo build --release
  python3 benches/python/state_scan.py                      # 100,000 batches, 10 tasks
  python3 benches/python/state_scan.py --batches 1000000    # a year of hourly batches: 100 tasks
  [--dir D] [--tasks N] [--repeat 5] [--build-only] [--top]
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # benches/python/ -> the repository
RECORD = os.path.join(ROOT, "fixtures/peer/finished/uc/.ubunye/lineage/demo/sales/ingest")
HOST = "ubunye-bench|pid:[1]"  # "this host" in the cached tree; rewritten to THIS before each run
THIS = f"{socket.gethostname()}|{os.readlink('/proc/self/ns/pid')}"  # as the peer and ubunye name a host
OTHER = "elsewhere|pid:[2]"


def key_of(task, variables):
    # FORMAT.md section 3, for string-valued variables.
    text = json.dumps({"task": task, "variables": variables}, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write(path, text, mtime=None):
    with open(path, "w") as f:
        f.write(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def build(uc, batches, tasks):
    TASKS = [f"demo/sales/t{i}" for i in range(tasks)]
    template = json.load(open(os.path.join(RECORD, os.listdir(RECORD)[0])))
    now = time.time()
    rng = random.Random(8)
    leases_every = max(batches // 1000, 1)
    counts = {}
    live = []
    for i in range(batches):
        task = TASKS[i % len(TASKS)]
        n = i // len(TASKS)
        variables = {"dt": f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}", "mode": "DEV", "part": str(n)}
        key = key_of(task, variables)
        run = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        ldir = os.path.join(uc, ".ubunye/leases", task)
        rdir = os.path.join(uc, ".ubunye/lineage", task)
        if n == 0:
            os.makedirs(ldir, exist_ok=True)
            os.makedirs(rdir, exist_ok=True)
            os.makedirs(os.path.join(uc, "out", task), exist_ok=True)
        rec = dict(template, run_id=run, task_path=task, variables=variables)
        claim = f"out/{task}/part-{i:06d}.csv"
        held = i % leases_every == 0
        kind = (i // leases_every) % 10 if held else None
        rec["status"] = {None: "success", 6: "error", 7: "success"}.get(kind, "running")
        write(os.path.join(rdir, run + ".json"), json.dumps(rec, indent=2))
        if not held:
            note = {"run_id": run, "task": task, "finished_at": "2026-11-29T10:32:07Z",
                    "outputs": {"events": {"claimed": [claim]}}}
            write(os.path.join(ldir, key + ".finished.json"), json.dumps(note, indent=2))
            counts["finished"] = counts.get("finished", 0) + 1
            continue
        write(os.path.join(uc, claim), "order,1\n")
        lease = {"run_id": run, "task": task, "pid": os.getpid(), "pid_started": None, "host": OTHER,
                 "started_at": "2026-11-29T10:00:00Z", "heartbeat": now,
                 "outputs": {"events": {"appends": True, "exact": True, "state": "writing", "claimed": [claim]}}}
        mtime = now
        if kind in (0, 1, 2):  # live on another host, written just now
            what = "live"
        elif kind in (3, 4, 5):  # dead on another host: 20 minutes old
            what, mtime = "dead", now - 1200
        elif kind == 6:  # kept by a failed run
            what, lease["kept"], mtime = "kept", True, now - 1200
        elif kind == 7:  # committed, holder gone: finish to do
            what, lease["committed"], mtime = "pending", True, now - 1200
        elif kind == 8:  # live on this host (the benchmark's own pid)
            what, lease["host"] = "live-here", HOST
        else:  # dead, with an orphan beside it and an old takeover mark
            what, mtime = "dead+orphan", now - 1200
            orphan = dict(lease, run_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)))
            write(os.path.join(ldir, f"{key}.dead-{i % 16**8:08x}.json"), json.dumps(orphan))
            write(os.path.join(ldir, f"{key}.taken-{orphan['run_id']}"), "", now - 3600)
            write(os.path.join(ldir, f"{key}.{i % 16**8:08x}.tmp"), "{")
        write(os.path.join(ldir, key + ".json"), json.dumps(lease), mtime)
        if what.startswith("live"):
            live.append(os.path.join(ldir, key + ".json"))
        counts[what] = counts.get(what, 0) + 1
    write(os.path.join(os.path.dirname(uc), "live-leases.txt"), "\n".join(live))
    return counts


def best(cmd, repeat, env=None, check=True):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=check, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - t)
    return min(times)


def peak_rss_mb(cmd, env, check=True):
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, env=env, check=check,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(out.stderr.strip().splitlines()[-1]) / 1024


def floor_bin(a, name="read_all"):
    """A C floor, compiled once into the cache folder."""
    src = os.path.join(ROOT, f"benches/floor/{name}.c")
    out = os.path.join(a.dir, name)
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.run(["gcc", "-O2", "-o", out, src], check=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", help="the cache folder (default /tmp/ubunye-bench-100k, or -<N> for other sizes)")
    ap.add_argument("--batches", type=int, default=100_000)
    ap.add_argument("--tasks", type=int, help="tasks the batches are spread over (default one per 10,000)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--build-only", action="store_true", help="build the use case and stop")
    ap.add_argument("--explain-only", action="store_true", help="measure explain alone (a million: list and doctor take minutes)")
    ap.add_argument("--top", action="store_true", help="also measure one dashboard on it (cargo bench)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/ubunye"))
    a = ap.parse_args()
    tasks = a.tasks or max(a.batches // 10_000, 1)
    if a.dir is None:
        a.dir = "/tmp/ubunye-bench-100k" if (a.batches, tasks) == (100_000, 10) else f"/tmp/ubunye-bench-{a.batches}-{tasks}"
    if not a.build_only and not os.path.exists(a.bin):
        sys.exit(f"{a.bin} is missing: run `cargo build --release` first")
    uc = os.path.join(a.dir, "uc")
    stamp = os.path.join(a.dir, f"built-v3-{a.batches}" + ("" if tasks == 10 else f"-{tasks}"))
    if not os.path.exists(stamp):
        shutil.rmtree(a.dir, ignore_errors=True)
        os.makedirs(uc)
        t = time.perf_counter()
        counts = build(uc, a.batches, tasks)
        print(f"built {uc} in {time.perf_counter() - t:.0f} s: {counts}", flush=True)
        write(stamp, json.dumps(counts))
    else:
        print(f"using {uc} ({open(stamp).read()}); delete {a.dir} to rebuild", flush=True)
    if a.build_only:
        return
    # The live leases must stay live while we measure: write them now, and the
    # ones "on this host" are held by this very process.
    now = time.time()
    for p in open(os.path.join(a.dir, "live-leases.txt")).read().split():
        doc = json.load(open(p))
        if doc.get("host") in (HOST, THIS):
            doc["host"], doc["pid"] = THIS, os.getpid()
        write(p, json.dumps(doc), now)
    env = dict(os.environ, NO_COLOR="1")
    floor_cmd = [floor_bin(a), os.path.join(uc, ".ubunye")]
    seen = subprocess.run(floor_cmd, check=True, capture_output=True, text=True).stdout.strip()
    print(f"{seen} under .ubunye ({tasks} tasks); best of {a.repeat}, warm cache", flush=True)
    floor = best(floor_cmd, a.repeat) if not a.explain_only else None
    list_cmd = [a.bin, "leases", "list", "--all", "--json", "-d", uc]
    out = subprocess.run(list_cmd, env=env, check=True, capture_output=True, text=True).stdout
    listed = json.loads(out)
    states = {}
    for b in listed["batches"]:
        states[b["state"]] = states.get(b["state"], 0) + 1
    del out
    dead = next(b for b in listed["batches"] if b["state"] == "dead")
    del listed
    print(f"states listed: {dict(sorted(states.items()))}", flush=True)
    if not a.explain_only:
        print(f"floor (C: nftw, open + read every file once, one thread) {floor * 1000:8.0f} ms", flush=True)
        lst = best(list_cmd, a.repeat, env)
        rss = peak_rss_mb(list_cmd, env)
        print(f"leases list --all --json {lst * 1000:8.0f} ms   ratio to floor {lst / floor:.2f}x (goal <= 1.5x)   "
              f"peak RSS {rss:.0f} MB (goal < 300)", flush=True)
    # Explain keeps an index of the task outside the use case: made by the
    # first look (cold), used by the next (warm); and with it off, the task
    # read whole every time.
    cache = os.path.join(a.dir, "explain-cache")
    shutil.rmtree(cache, ignore_errors=True)
    ienv = dict(env, UBUNYE_CACHE_DIR=cache)
    explain_cmd = [a.bin, "leases", "explain", dead["key"], "-d", uc]
    cold = best(explain_cmd, 1, ienv)
    exp = best(explain_cmd, max(a.repeat, 10), ienv)
    exp_rss = peak_rss_mb(explain_cmd, ienv)
    whole = best(explain_cmd, a.repeat, dict(env, UBUNYE_CACHE_DIR=""))
    stat_cmd = [floor_bin(a, "stat_task")] + [os.path.join(uc, ".ubunye", f, dead["task"]) for f in ("leases", "lineage")]
    seen = subprocess.run(stat_cmd, check=True, capture_output=True, text=True).stdout.strip()
    stat_floor = best(stat_cmd, max(a.repeat, 10))
    print(f"explain's floor (C: its task's two folders listed, every entry stat'ed once, one thread; {seen}) "
          f"{stat_floor * 1000:6.1f} ms", flush=True)
    print(f"leases explain {dead['key']} {exp * 1000:6.1f} ms (the index warm; goal < 20)   ratio to its floor "
          f"{exp / stat_floor:.2f}x   peak RSS {exp_rss:.0f} MB; "
          f"the first look (making the index) {cold * 1000:.0f} ms; the index off (its task read whole) {whole * 1000:.0f} ms",
          flush=True)
    prefix_cmd = [a.bin, "leases", "explain", dead["key"][:8], "-d", uc]
    exp8 = best(prefix_cmd, a.repeat, ienv)
    print(f"leases explain {dead['key'][:8]} (a prefix: every lease folder listed) {exp8 * 1000:6.1f} ms", flush=True)
    if a.explain_only:
        return
    doctor_cmd = [a.bin, "doctor", "--json", "-d", uc]
    doc_s = best(doctor_cmd, min(a.repeat, 3), env, check=False)
    doc_rss = peak_rss_mb(doctor_cmd, env, check=False)
    print(f"doctor --json {doc_s * 1000:8.0f} ms   ratio to floor {doc_s / floor:.2f}x (goal <= 1.5x)   "
          f"peak RSS {doc_rss:.0f} MB (goal < 100)", flush=True)
    if a.top:
        env = dict(os.environ, UBUNYE_BENCH_BATCHES="2000", UBUNYE_BENCH_MEMORY_DIR=uc, UBUNYE_BENCH_ONLY_FIRST="1",
                   UBUNYE_BENCH_RESCANS="1")
        out = subprocess.run(["cargo", "bench", "-q", "-p", "ubunye-tui", "--bench", "top"], cwd=ROOT, env=env,
                             check=True, capture_output=True, text=True).stdout
        print("\n".join(line for line in out.splitlines() if line.startswith("one top")), flush=True)


if __name__ == "__main__":
    main()
