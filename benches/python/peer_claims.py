"""The peer's side of benches/claims.rs: the same sequence, through the real
ubunye-engine 0.8.0 RunLease API, timed the same way (the staged files are
written before the clock starts).

usage: python peer_claims.py <base_dir> <n> <runs> <per_file: 0|1>
prints one JSON object: {"totals_s": [...]}
"""

import json
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

from ubunye.core import runs


garbage = []


def one(base: Path, n: int, per_file: bool) -> float:
    root = base / f"uc-{uuid.uuid4().hex[:8]}"
    out = root / "out" / "events"
    out.mkdir(parents=True)
    staging = out / f"_ubunye-{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    job = uuid.uuid4()
    names = [f"part-{i:05d}-{job}-c000.snappy.parquet" for i in range(n)]
    for name in names:
        with open(staging / name, "wb") as fh:
            fh.write(b"PAR1\x00\x00PAR1")
    targets = [str(out / name) for name in names]
    os.sync()  # as benches/claims.rs: writeback of the staged files stays out of the timed part
    t0 = time.perf_counter()
    lease = runs.RunLease(root, "bench/pkg/append", {"dt": "2025-01-01", "dtf": None, "mode": "DEV"}, str(uuid.uuid4()))
    lease.acquire()
    lease.writing("events", appends=True, exact=True)
    if not per_file:
        lease.staging(str(staging))
        lease.claim_all(targets)
        for name, target in zip(names, targets):
            os.replace(staging / name, target)
            lease.landed(target)
    else:
        for name, target in zip(names, targets):
            lease.claim(target)
            os.replace(staging / name, target)
            lease.landed(target)
    lease.all_landed(targets)
    shutil.rmtree(staging, ignore_errors=True)
    assert lease.commit()
    lease.release()
    total = time.perf_counter() - t0
    assert sum(1 for p in out.iterdir() if p.name.startswith("part-")) == n
    garbage.append(root)  # removed after all runs, as benches/claims.rs does
    return total


def main() -> None:
    base, n, count, per_file = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
    base.mkdir(parents=True, exist_ok=True)
    totals = [one(base, n, per_file) for _ in range(count)]
    for root in garbage:
        shutil.rmtree(root)
    print(json.dumps({"totals_s": totals}))


if __name__ == "__main__":
    main()
