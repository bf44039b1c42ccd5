"""Progress of long jobs (issue 17, defect 8): steady, rate-limited lines in the job's log and, for a
job whose log is a file (Snakemake), on stderr too; other log lines stay in the log only."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import torch

from biastransfer.models.features import extract_features
from biastransfer.models.spec import Preprocess
from biastransfer.progress import Progress

ROOT = Path(__file__).resolve().parents[1]


def test_lines_are_rate_limited_and_the_last_one_always_comes():
    now, lines = [0.0], []
    progress = Progress("embedding", 100, unit="images", every_s=10, log=lines.append, clock=lambda: now[0])
    for _ in range(100):  # one image a second: a line every 10 s and one at the end, none after
        now[0] += 1
        progress.update()
    progress.update(0)
    assert len(lines) == 10
    assert lines[0] == "embedding: 10/100 images (10%) in 10 s, 1.0 images/s, about 90 s left"
    assert lines[-1] == "embedding: 100/100 images (100%) in 100 s, 1.0 images/s"


def test_embedding_reports_every_batch_to_the_progress_callback(tmp_path):
    from PIL import Image

    paths = []
    for k in range(5):
        paths.append(tmp_path / f"{k}.png")
        Image.new("RGB", (8, 8), (k * 40, 0, 0)).save(paths[-1])
    seen = []
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 2))
    feats = extract_features(model, paths, Preprocess(8, 8), batch_size=2, progress=seen.append)
    assert seen == [2, 2, 1] and feats.shape == (5, 2) and np.isfinite(feats).all()


JOB = textwrap.dedent("""
    import logging, sys
    from types import SimpleNamespace
    sys.path[:0] = [{scripts!r}, {tests!r}]
    from biastransfer.progress import Progress
    from biastransfer.scripting import run
    from test_scripting import Named

    def main(n: int):
        logging.getLogger("job").info("a detail for the log only")
        progress = Progress("finetuning", n, unit="batches", every_s=0)
        for _ in range(n):
            progress.update()

    smk = SimpleNamespace(input=Named(), output=Named(), params=Named(n=3), threads=1, wildcards=Named(),
                          log=[{log!r}], rule="job")
    run(main, smk)
""")


def test_a_snakemake_job_shows_progress_on_stderr_and_keeps_everything_in_its_log(tmp_path):
    log = tmp_path / "job.log"
    code = JOB.format(scripts=str(ROOT / "src"), tests=str(ROOT / "tests"), log=str(log))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    shown = [line for line in done.stderr.splitlines() if line.strip()]
    assert [line.split(" INFO ")[1].split(" in ")[0] for line in shown] == [
        "finetuning: 1/3 batches (33%)",
        "finetuning: 2/3 batches (67%)",
        "finetuning: 3/3 batches (100%)",
    ]
    text = log.read_text()
    assert "a detail for the log only" in text and text.count("finetuning:") == 3
