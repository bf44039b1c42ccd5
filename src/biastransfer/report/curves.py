"""Training curves of finetuning runs (and of the scratch reference networks trained with the same
recipe): loss and validation metric per epoch, one line per seed."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from biastransfer.report.formatting import model_label, require_columns
from biastransfer.report.style import OKABE_ITO, paper_figure, paper_style

CURVE_COLUMNS = ("epoch", "train_loss", "val_loss", "metric")
SEED_COLOURS = (
    OKABE_ITO["blue"],
    OKABE_ITO["orange"],
    OKABE_ITO["bluish_green"],
    OKABE_ITO["reddish_purple"],
    OKABE_ITO["vermillion"],
    OKABE_ITO["sky_blue"],
    OKABE_ITO["black"],
)
_RUN = re.compile(r"(?P<dataset>[^/]+)/(?P<model>[^/]+)/seed(?P<seed>[0-9]+)/(curve\.csv|metrics\.json)$")


def run_of(path: str | os.PathLike) -> tuple[str, str, int]:
    """``(dataset, model, seed)`` of a ``.../{dataset}/{model}/seed{n}/curve.csv`` or ``metrics.json``."""
    match = _RUN.search(Path(path).as_posix())
    if match is None:
        raise ValueError(f"{path}: not a run's .../{{dataset}}/{{model}}/seed{{n}}/curve.csv or metrics.json")
    return match["dataset"], match["model"], int(match["seed"])


def read_curves(curves: Sequence[str | os.PathLike], metrics: Sequence[str | os.PathLike] = ()) -> pd.DataFrame:
    """The runs' curves in one table with ``dataset``, ``model``, ``seed``, and from each run's
    metrics.json (when given) ``metric_name`` and ``epoch_best``. ValueError names a file with
    missing columns or no rows."""
    extra = {}
    for path in metrics:
        with open(path) as f:
            record = json.load(f)
        extra[run_of(path)] = {
            "metric_name": record.get("metric_name", "metric"),
            "epoch_best": record.get("epoch_best"),
        }
    frames = []
    for path in curves:
        frame = pd.read_csv(path)
        require_columns(frame, CURVE_COLUMNS, where=str(path))
        if frame.empty:
            raise ValueError(f"{path}: no epochs")
        dataset, model, seed = run_of(path)
        info = extra.get((dataset, model, seed), {"metric_name": "metric", "epoch_best": None})
        frames.append(frame.assign(dataset=dataset, model=model, seed=seed, **info))
    return pd.concat(frames, ignore_index=True)


def read_histories(metrics: Sequence[str | os.PathLike]) -> pd.DataFrame:
    """The same table as :func:`read_curves` from runs whose metrics.json holds the curve as
    ``history`` (the scratch reference networks). ValueError names a file without one."""
    frames = []
    for path in metrics:
        with open(path) as f:
            record = json.load(f)
        history = pd.DataFrame(record.get("history") or [])
        require_columns(history, CURVE_COLUMNS, where=f"{path}: history")
        dataset, model, seed = run_of(path)
        frames.append(
            history.assign(
                dataset=dataset,
                model=model,
                seed=seed,
                metric_name=record.get("metric_name", "metric"),
                epoch_best=record.get("epoch_best"),
            )
        )
    return pd.concat(frames, ignore_index=True)


def curves_figure(curves: pd.DataFrame, *, scratch: bool = False) -> Figure:
    """Loss (train solid, validation dashed) and validation metric per epoch of one model finetuned on
    one dataset (``scratch``: trained from random initialisation, the BTS reference), a colour per seed;
    a ring marks each run's best epoch (the checkpoint kept)."""
    runs = curves[["dataset", "model"]].drop_duplicates()
    if len(runs) != 1:
        raise ValueError(f"curves_figure draws one model on one dataset, not {len(runs)} combinations")
    dataset, model = runs.iloc[0]
    metric_name = str(curves["metric_name"].iloc[0]) if "metric_name" in curves else "metric"
    with paper_style(**{"axes.grid.axis": "both"}):
        fig, (loss_ax, metric_ax) = paper_figure("double", 2.4, ncols=2)
        for i, (seed, run) in enumerate(curves.groupby("seed", sort=True)):
            colour = SEED_COLOURS[i % len(SEED_COLOURS)]
            run = run.sort_values("epoch")
            loss_ax.plot(run["epoch"], run["train_loss"], color=colour, marker=".", label=f"seed {seed} train")
            loss_ax.plot(
                run["epoch"], run["val_loss"], color=colour, linestyle="--", marker=".", label=f"seed {seed} validation"
            )
            metric_ax.plot(run["epoch"], run["metric"], color=colour, marker=".", label=f"seed {seed}")
            best = run["epoch_best"].iloc[0] if "epoch_best" in run else None
            if best is not None and not pd.isna(best) and (run["epoch"] == best).any():
                metric_ax.scatter(
                    [best],
                    run.loc[run["epoch"] == best, "metric"],
                    s=60,
                    facecolor="none",
                    edgecolor=colour,
                    linewidth=1.0,
                )
        epochs = sorted(curves["epoch"].unique())
        for ax in (loss_ax, metric_ax):
            ax.set_xlabel("epoch")
            ax.set_xticks(epochs if len(epochs) <= 12 else epochs[:: -(-len(epochs) // 12)])
        loss_ax.set_ylabel("loss")
        loss_ax.set_title("loss: train (solid), validation (dashed)")
        metric_ax.set_ylabel(f"validation {metric_name}")
        metric_ax.set_title(f"validation {metric_name}; ring: the epoch kept")
        metric_ax.legend(loc="best")
        how = "trained from scratch (the BTS reference) on" if scratch else "finetuned on"
        n = curves["seed"].nunique()
        fig.suptitle(f"{model_label(model)} {how} {dataset}: training curves ({n} seed{'s' if n > 1 else ''})")
    return fig
