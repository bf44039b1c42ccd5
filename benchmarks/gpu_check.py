"""Every CUDA path of the workflow once, on a real GPU, in at most 8 minutes (docs/gpu.md).

    python benchmarks/gpu_check.py OUT            # on a CUDA machine
    python benchmarks/gpu_check.py OUT --cpu      # the same steps on CPU at tiny sizes (tests run it)

Steps (each within its own time budget; a failing step is recorded and the next one runs):
  1. tests: the test suite's device-switch tests (marked ``device``) with BIASTRANSFER_TEST_DEVICE=cuda
     (with --cpu: only collected, since the suite runs them on CPU anyway);
  2. workflow: the tiny config (tests/configs/tiny.yaml) end to end with ``finetune.device`` and
     ``analysis.embed.device`` cuda, two loader workers, trajectories and layer profiles on; then its
     finetuning again with ``compile: true`` (one epoch; in the same folder, so only the finetuning reruns);
     with --cpu only the jobs that reach a device (``--until`` the embedding, layer-embedding and finetuning
     rules, 15 of the 52 jobs: the rest only read tables, and tests/test_reruns.py runs the whole tiny DAG on
     CPU with trajectories and layer profiles on);
  3. figures: embedding images/s of the six paper architectures at random initialisation (forward only and
     end to end from JPEG files) with peak GPU memory; the resnet50 training step, ours (precision auto,
     channels_last, batch 128) against the authors' recipe (fp32, batch 32, contiguous), with each one's
     peak GPU memory; and benchmarks/bench_input.py --device cuda (the decoded-once cache against today's
     input pipeline, and batched GPU JPEG decoding).
Writes OUT/gpu_check.json (environment, each step's status, seconds and figures) and OUT/gpu_check.log
(everything, including the tests' and Snakemake's output). Exit status 1 if any step failed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

import torch  # noqa: E402
import yaml  # noqa: E402

PAPER_MODELS = ["resnet18", "resnet50", "bit_m_r50x1", "clip_vit_b32", "moco_r50_v1", "simclr_r50_v1"]
# Seconds per step on CUDA: 8 minutes in all, with some left for start-up and writing (ten times as
# many with --cpu, where the tiny workflow alone takes minutes on a busy machine).
BUDGET_S = {"tests": 150, "workflow": 180, "embedding": 70, "training_step": 50, "input_pipeline": 25}
LOG = logging.getLogger("gpu_check")


def sizes(cpu: bool) -> dict:
    """What each measurement runs: the paper's sizes on CUDA, tiny ones with --cpu."""
    if cpu:
        return {
            "embed_models": ["resnet18"],
            "embed_images": 4,
            "embed_size": (64, 48),
            "embed_batch": 4,
            "workers": 0,
            "repeats": 1,
            "train_arch": "resnet18",
            "train_crop": 32,
            "train_images": 64,
            "train_batch": 8,
            "train_steps": 1,
            "train_rounds": 1,
        }
    workers = max(1, min(8, (os.cpu_count() or 2) - 2))
    return {
        "embed_models": PAPER_MODELS,
        "embed_images": 1024,
        "embed_size": (640, 480),
        "embed_batch": 128,
        "workers": workers,
        "repeats": 2,
        "train_arch": "resnet50",
        "train_crop": 224,
        "train_images": 512,
        "train_batch": 128,
        "train_steps": 12,
        "train_rounds": 3,
    }


def environment(device: torch.device) -> dict:
    from biastransfer.models.device import bf16_autocast

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cpus": os.cpu_count(),
        "device": str(device),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(
            gpu=props.name,
            capability=list(torch.cuda.get_device_capability(device)),
            gpu_memory_gib=props.total_memory / 2**30,
            native_bf16=bf16_autocast(device),
            cudnn=torch.backends.cudnn.version(),
        )
    return env


def run_logged(cmd: list[str], *, timeout: float, cwd: Path = ROOT, env: dict | None = None) -> dict:
    """Run ``cmd`` with its output in the log; its exit status, seconds and last lines. On timeout the
    whole process group goes (Snakemake's jobs too, which would otherwise hold the GPU)."""
    LOG.info("$ %s", " ".join(map(str, cmd)))
    tic = time.perf_counter()
    proc = subprocess.Popen(
        list(map(str, cmd)),
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, rc = proc.communicate(timeout=timeout)[0], proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, rc = proc.communicate()[0] + f"\n(timed out after {timeout:.0f} s)", "timeout"
    LOG.info("%s", out)
    return {"returncode": rc, "seconds": time.perf_counter() - tic, "tail": out.strip().splitlines()[-15:]}


def step_tests(device: torch.device, cpu: bool, budget: float) -> dict:
    files = sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py") if "mark.device" in p.read_text()
    )
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "device and not slow and not slurm", *files]
    if cpu:
        cmd.append("--collect-only")
    run = run_logged(cmd, timeout=budget, env={"BIASTRANSFER_TEST_DEVICE": device.type})
    if run["returncode"] not in (0, "timeout") or not run["tail"] or "no tests" in run["tail"][-1]:
        raise RuntimeError(f"pytest: exit status {run['returncode']}: {' | '.join(run['tail'][-3:])}")
    if run["returncode"] == "timeout":
        raise TimeoutError(f"pytest did not finish in {budget:.0f} s")
    return {**run, "summary": run["tail"][-1]}


def tiny_config(path: Path, device: str, **finetune) -> Path:
    conf = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())
    conf["finetune"].update(device=device, num_workers=2, trajectory="every")
    conf["finetune"]["defaults"].update(finetune)
    conf["analysis"]["embed"].update(device=device, num_workers=2)
    conf["analysis"]["layers"] = {"enabled": True}
    path.write_text(yaml.safe_dump(conf))
    return path


# The rules of the tiny DAG whose jobs put a network on the device (their upstream jobs run too): the eager
# run's targets with --cpu, where the other jobs add minutes of start-up and no device path.
DEVICE_RULES = ["embed", "embed_layers", "finetune_summary"]


def step_workflow(device: torch.device, cpu: bool, budget: float, work: Path) -> dict:
    deadline = time.perf_counter() + budget
    runs = {}
    eager = ["--until", *DEVICE_RULES] if cpu else []
    work.mkdir(parents=True)
    # the compiled run in the same folder: only its finetuning (whose params changed) runs again
    for name, targets, extra in (("eager", eager, {}), ("compiled", ["finetune_summary"], {"compile": True})):
        config = tiny_config(work / f"{name}.yaml", device.type, **extra)
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", ROOT / "Snakefile", "--configfile", config]
        cmd += ["--cores", str(min(8, os.cpu_count() or 2)), *targets]
        runs[name] = run_logged(cmd, cwd=work, timeout=max(1.0, deadline - time.perf_counter()))
        if runs[name]["returncode"] != 0:
            raise RuntimeError(f"snakemake ({name}): exit status {runs[name]['returncode']}: {runs[name]['tail'][-3:]}")
        metrics = sorted(work.glob("results/finetune/*/*/seed*/metrics.json"))
        runs[name]["runtime"] = [json.loads(p.read_text()).get("runtime") for p in metrics]
        if name == "eager":
            from biastransfer.embeddings import read_metadata

            meta = [read_metadata(p) for p in sorted(work.glob("results/embeddings/*/*/*.parquet"))]
            runs[name]["embeddings"] = sorted({(m["device"], m["amp"], m["channels_last"]) for m in meta})
    return runs


def step_embedding(device: torch.device, size: dict, work: Path, budget: float) -> dict:
    """Each model in turn while the budget lasts (the rest are recorded as not measured)."""
    import bench_embed

    deadline = time.perf_counter() + budget
    work.mkdir(parents=True)
    distinct = bench_embed.write_jpegs(work, max(1, size["embed_images"] // 4), *size["embed_size"])
    paths = (distinct * 4)[: size["embed_images"]]  # each file decoded four times: as costly, written once
    found = {}
    for name in size["embed_models"]:
        if time.perf_counter() > deadline:
            found[name] = {"model": name, "not_measured": f"the step's {budget:.0f} s were spent"}
            continue
        found[name] = bench_embed.measure_model(
            name, paths, batch_size=size["embed_batch"], workers=size["workers"], repeats=size["repeats"], device=device
        )
        LOG.info("embedding %s: %s", name, found[name])
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return found


def step_training(device: torch.device, size: dict, work: Path) -> dict:
    import bench_train

    work.mkdir(parents=True)
    split = bench_train.write_jpegs(work, max(size["train_images"], 2 * max(size["train_batch"], 32)))
    found = bench_train.step_comparison(
        split,
        device,
        arch=size["train_arch"],
        batch=size["train_batch"],
        steps=size["train_steps"],
        workers=size["workers"],
        rounds=size["train_rounds"],
        crop=size["train_crop"],
    )
    LOG.info("training step: %s", found)
    return found


def step_input(device: torch.device, cpu: bool, budget: float, work: Path) -> dict:
    """benchmarks/bench_input.py on ``device``: the decoded-once cache against today's pipeline and, on CUDA,
    batched GPU JPEG decoding; its figures (tiny sizes with --cpu) as this step's result."""
    figures = work / "input_pipeline.json"
    work.mkdir(parents=True, exist_ok=True)
    tiny = ["--images", "4", "--rounds", "1", "--demo-images", "8"] if cpu else []
    run = run_logged(
        [sys.executable, ROOT / "benchmarks" / "bench_input.py", "--device", device.type, "--json", figures, *tiny],
        timeout=budget,
    )
    if run["returncode"] != 0:
        raise RuntimeError(f"bench_input.py: exit status {run['returncode']}: {run['tail'][-3:]}")
    return json.loads(figures.read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="folder for gpu_check.json and gpu_check.log")
    ap.add_argument("--cpu", action="store_true", help="run every step on CPU at tiny sizes")
    ap.add_argument("--skip", nargs="*", default=[], choices=list(BUDGET_S), help="steps not to run")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(args.out / "gpu_check.log", mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    LOG.addHandler(handler)
    LOG.addHandler(logging.StreamHandler(sys.stdout))
    LOG.setLevel(logging.INFO)
    if not args.cpu and not torch.cuda.is_available():
        LOG.error("no CUDA device: run on a GPU machine, or with --cpu for the tiny CPU version")
        return 2
    device = torch.device("cpu" if args.cpu else "cuda")
    size = sizes(args.cpu)
    report = {"mode": device.type, "environment": environment(device), "sizes": size, "steps": {}}
    LOG.info("environment: %s", report["environment"])
    began = time.perf_counter()
    scale = 10 if args.cpu else 1
    with tempfile.TemporaryDirectory(prefix="gpu_check_", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        actions = {
            "tests": lambda b: step_tests(device, args.cpu, b),
            "workflow": lambda b: step_workflow(device, args.cpu, b, work / "workflow"),
            "embedding": lambda b: step_embedding(device, size, work / "embed", b),
            "training_step": lambda b: step_training(device, size, work / "train"),
            "input_pipeline": lambda b: step_input(device, args.cpu, b, work / "input"),
        }
        for name, action in actions.items():
            if name in args.skip:
                report["steps"][name] = {"status": "skipped", "why": "--skip"}
                continue
            budget = BUDGET_S[name] * scale
            LOG.info("== %s (budget %d s)", name, budget)
            tic = time.perf_counter()
            try:
                found = action(budget)
                status = found.pop("status", "ok")
                report["steps"][name] = {"status": status, "seconds": time.perf_counter() - tic, "result": found}
            except Exception as exc:  # record it and go on: one GPU session should show every failure
                LOG.error("%s failed:\n%s", name, traceback.format_exc())
                report["steps"][name] = {
                    "status": "failed",
                    "seconds": time.perf_counter() - tic,
                    "error": f"{type(exc).__name__}: {exc}",
                }
            if device.type == "cuda":
                torch.cuda.empty_cache()
    report["seconds"] = time.perf_counter() - began
    report["ok"] = all(s["status"] != "failed" for s in report["steps"].values())
    (args.out / "gpu_check.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    LOG.info(
        "%s in %.0f s: %s",
        "all steps passed" if report["ok"] else "some steps FAILED",
        report["seconds"],
        {k: v["status"] for k, v in report["steps"].items()},
    )
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
