"""Per-process peak memory and wall time for benchmarks/bench_metadata_scale.py.

Python imports ``sitecustomize`` at start-up from the first folder on its path that holds one; the
benchmark puts this folder first on ``PYTHONPATH`` for the runs it measures. When ``BIASTRANSFER_PROBE``
names a file, every Python process appends one JSON line to it at exit: its command line, its wall
time from interpreter start, its peak resident memory (``VmHWM`` of /proc/self/status: the high-water
mark of this program's own memory; ``ru_maxrss`` would also count the parent's pages a forked child
held before it started this program), the largest proportional memory (PSS) of itself and its live
children together, sampled every 0.2 s while it has children (a job's process pool; shared pages
counted once), and, when it runs a Snakemake rule's script, the rule, its wildcards, threads and
declared ``mem_mb``. Without the variable it does nothing.
"""

import atexit
import json
import os
import sys
import threading
import time

_OUT = os.environ.get("BIASTRANSFER_PROBE")


def _hwm_mb() -> float:
    with open("/proc/self/status") as fh:
        line = next(x for x in fh if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _start() -> None:
    import psutil

    started, peak = time.time(), [0.0]
    me = psutil.Process()

    def sample() -> None:
        while True:
            try:
                children = me.children(recursive=True)
                if children:
                    total = sum(p.memory_full_info().pss for p in [me, *children])
                    peak[0] = max(peak[0], total / 2**20)
            except psutil.Error:
                pass
            time.sleep(0.2)

    threading.Thread(target=sample, daemon=True, name="metadata-probe").start()

    def record() -> None:
        smk = getattr(sys.modules.get("__main__"), "snakemake", None)
        line = {
            "pid": os.getpid(),
            "argv": sys.argv,
            "wall_s": time.time() - started,
            "peak_mb": _hwm_mb(),
            "tree_pss_mb": peak[0],
        }
        if smk is not None:
            line.update(
                rule=smk.rule,
                wildcards=dict(smk.wildcards.items()),
                threads=smk.threads,
                mem_mb=smk.resources.get("mem_mb"),
            )
        with open(_OUT, "a") as fh:
            fh.write(json.dumps(line) + "\n")

    atexit.register(record)


if _OUT:
    _start()
