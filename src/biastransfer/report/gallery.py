"""A contact sheet per analysis set: a few example images of every class, so a reader sees what each
class holds, with a table of the shown images' sources and licences (from the manifest, docs/formats.md).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from biastransfer.images import load_rgb
from biastransfer.report.formatting import require_columns
from biastransfer.report.style import paper_figure, paper_style

SHEET_COLUMNS = ("number", "class", "image_id", "path", "source", "source_split")
THUMBNAIL_PX = 160


def sheet_images(manifest: pd.DataFrame, per_class: int = 4) -> pd.DataFrame:
    """The first ``per_class`` images (by image id) of every class, classes in manifest order, numbered from 1."""
    require_columns(manifest, ("image_id", "class", "path", "source", "source_split"), where="analysis-set manifest")
    if per_class < 1:
        raise ValueError(f"per_class must be at least 1, not {per_class}")
    order = list(dict.fromkeys(manifest["class"]))
    shown = (
        manifest.sort_values("image_id")
        .groupby("class", sort=False)
        .head(per_class)
        .assign(rank=lambda f: f["class"].map({c: i for i, c in enumerate(order)}))
        .sort_values(["rank", "image_id"], kind="stable")
    )
    shown = shown.assign(number=np.arange(1, len(shown) + 1))
    return shown.loc[:, list(SHEET_COLUMNS)].reset_index(drop=True)


def _thumbnail(path: str | os.PathLike) -> np.ndarray:
    image = load_rgb(path)
    image.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))
    return np.asarray(image)


def contact_sheet(
    shown: pd.DataFrame, *, analysis_set: str, counts: dict[str, int], root: str | os.PathLike = "."
) -> Figure:
    """Thumbnails of ``shown`` (from :func:`sheet_images`): one block per class, two blocks a row,
    each block titled with the class and its number of images; each thumbnail numbered as in the
    sources table. FileNotFoundError names a missing image before anything is drawn."""
    paths = [p if p.is_absolute() else Path(root) / p for p in map(Path, shown["path"])]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"contact sheet of {analysis_set!r}: missing image file(s) {missing[:3]}")
    classes = list(dict.fromkeys(shown["class"]))
    per_class = int(shown.groupby("class").size().max())
    blocks = 2 if len(classes) > 1 else 1
    rows = -(-len(classes) // blocks)
    sources = sorted(set(shown["source"]))
    one_source = len(sources) == 1
    with paper_style(**{"axes.grid": False}):
        fig, axes = paper_figure(
            "double",
            0.5 + rows * (7.0 / (blocks * per_class) + 0.25),
            nrows=rows,
            ncols=blocks * per_class,
            squeeze=False,
        )
        for ax in axes.flat:
            ax.axis("off")
        for c, cls in enumerate(classes):
            part = shown[shown["class"] == cls]
            row, first = divmod(c, blocks)
            for k, (r, path) in enumerate(zip(part.itertuples(index=False), [paths[i] for i in part.index])):
                ax = axes[row, first * per_class + k]
                ax.imshow(_thumbnail(path))
                ax.axis("on")
                ax.set_xticks([])
                ax.set_yticks([])
                ax.grid(False)
                if not one_source:
                    ax.set_xlabel(f"#{r.number}", labelpad=1)
            axes[row, first * per_class].set_title(
                f"{cls} ({counts.get(cls, len(part))} images)", loc="left", fontweight="bold"
            )
        note = f"source: {sources[0]}" if one_source else "numbers: sources and licences in contact_sheet.csv"
        fig.suptitle(
            "\n".join(
                textwrap.wrap(
                    f"Analysis set {analysis_set}: the first {per_class} images (by id) of each class; {note}", 110
                )
            )
        )
    return fig
