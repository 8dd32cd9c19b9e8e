#!/usr/bin/env python3
"""bench/ledger_gen.py N FILE [--seed S] [--unique-names]: N GPU jobs as `sacct -a -X -P -o $(gpuprof
ledger --print-fields)` prints them, with its header, ending over the 14 days before
2026-12-06T00:00 (run the ledger with --until 2026-12-06): 1 000 users in 60 accounts, 4
partitions, 512 nodes; 80 % with a gpuprof record in SystemComment (a job directory of
typical length), some beside another tool's entry; failed, out-of-memory and timed-out
jobs; job names with '|' in 1 % (with --unique-names, every other name is its job's own:
`--by user,name` then has nearly one group per job). Deterministic for a seed. Prints the sums the ledger must
give (allocated and the records' seconds by cause) on stdout as JSON."""
import json
import random
import sys
import time

CAUSES = ["compute", "comm", "input", "launch", "sync", "startup", "idle", "unused", "unprofiled"]
STATES = ["COMPLETED"] * 80 + ["FAILED"] * 8 + ["OUT_OF_MEMORY"] * 3 + ["TIMEOUT"] * 5 + ["CANCELLED by 0"] * 4


def record(rng, gpus, elapsed, user, jid):
    """a record covering part of the allocation, its seconds to 3 decimals"""
    ranks = gpus
    used = rng.randint(0, gpus)
    share = [rng.random() for _ in CAUSES]
    cover = gpus * elapsed * rng.uniform(0.5, 1.0)
    tot = sum(share)
    s = [round(cover * x / tot, 3) for x in share]
    if used == gpus:
        s[7] = 0.0
    fields = " ".join(f"{k}={v:.3f}" for k, v in zip(CAUSES, s))
    top = rng.choice(["input_bound", "sync_stall", "idle_gaps", "straggler", "none", "cuda_oom"])
    return (f"gpuprof-record/1 ranks={ranks} gpus={used} {fields} step_ms={rng.uniform(5, 500):.3f} "
            f"peak={rng.randint(1, 80) << 30} card={80 << 30} top={top} "
            f"dir=/scratch/gpfs/{user}/runs/experiment-{jid % 977}/gpuprof-{jid}"), s


def main():
    n, path = int(sys.argv[1]), sys.argv[2]
    rest = sys.argv[3:]
    unique = "--unique-names" in rest
    seed = int(rest[rest.index("--seed") + 1]) if "--seed" in rest else 1
    rng = random.Random(seed)
    end0 = int(time.mktime(time.strptime("2026-12-06T00:00:00", "%Y-%m-%dT%H:%M:%S")))
    alloc = 0.0
    rec = [0.0] * len(CAUSES)
    with open(path, "w") as f:
        f.write("JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment\n")
        for i in range(n):
            jid = 1000000 + i
            u = rng.randrange(1000)
            user, acct = f"user{u:04d}", f"acct{u % 60:02d}"
            part = rng.choice(["gpu", "gpu", "gpu-long", "debug", "mig"])
            nn = 1 if rng.random() < 0.9 else rng.randint(2, 8)
            first = rng.randrange(512 - nn)
            nodes = f"gpu{first:03d}" if nn == 1 else f"gpu[{first:03d}-{first + nn - 1:03d}]"
            gpus = nn * rng.choice([1, 1, 2, 4, 8])
            elapsed = rng.randint(30, 86400)
            end = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(end0 - rng.randrange(14 * 86400)))
            name = "train|v2" if rng.random() < 0.01 else f"run-{rng.randrange(5000)}"
            if unique and name != "train|v2":
                name = f"sweep-{jid}-lr{rng.randrange(1000)}"
            sc = ""
            if rng.random() < 0.8:
                sc, s = record(rng, gpus, elapsed, user, jid)
                rec = [a + b for a, b in zip(rec, s)]
                if rng.random() < 0.1:
                    sc = "bb_error=none; " + sc
            alloc += gpus * elapsed
            f.write(f"{jid}|{user}|{acct}|{part}|{name}|{nodes}|{rng.choice(STATES)}|{end}|{elapsed}|"
                    f"billing={gpus},cpu={gpus * 8},gres/gpu={gpus},mem=64G,node={nn}|{sc}\n")
    json.dump({"jobs": n, "allocated_s": alloc, "records_gpu_s": dict(zip(CAUSES, rec))}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
