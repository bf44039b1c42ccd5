"""Progress of long jobs (embedding, finetuning, downloads): rate-limited lines on one logger.

Lines go to the ``biastransfer.progress`` logger, which propagates to the job's log; under Snakemake,
:func:`biastransfer.scripting.run` also shows them on stderr, the console of a local run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

LOGGER = logging.getLogger("biastransfer.progress")
EVERY_S = 15.0


class Progress:
    """Counts ``total`` items of work and logs ``what: done/total (pct), rate, eta`` at most every
    ``every_s`` seconds, and once more when the count reaches ``total``."""

    def __init__(
        self,
        what: str,
        total: int,
        *,
        unit: str = "items",
        every_s: float = EVERY_S,
        log: Callable[[str], None] = LOGGER.info,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.what, self.total, self.unit, self.every_s, self.log, self.clock = what, total, unit, every_s, log, clock
        self.done = 0
        self.t0 = self.last = clock()
        self.finished = False

    def update(self, n: int = 1) -> None:
        """Add ``n`` finished items; log a line if ``every_s`` has passed or the work is complete."""
        self.done += n
        now = self.clock()
        complete = self.done >= self.total
        if not self.finished and (complete or now - self.last >= self.every_s):
            self.last, self.finished = now, complete
            self.log(self.line(now))

    def line(self, now: float) -> str:
        elapsed = max(now - self.t0, 1e-9)
        rate = self.done / elapsed
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        eta = f", about {(self.total - self.done) / rate:.0f} s left" if rate > 0 and self.done < self.total else ""
        return (
            f"{self.what}: {self.done}/{self.total} {self.unit}{pct} in {elapsed:.0f} s, {rate:.1f} {self.unit}/s{eta}"
        )
