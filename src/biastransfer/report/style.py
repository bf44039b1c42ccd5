"""One look for every figure of the report, sized for a paper.

Draw inside ``with paper_style():`` on a figure from :func:`paper_figure` (3.5 in single column or
7 in double column wide), name stages with :func:`stage_words`, and write with :func:`save_figure`,
which refuses a figure that would print wider than a page column or with text under
:data:`MIN_FONT_PT` (its check, :func:`print_size_problems`, is what the tests assert). Colours are
the Okabe-Ito palette, distinguishable with the common colour-vision deficiencies.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from biastransfer.atomic import atomic_path  # noqa: E402
from biastransfer.stages import PRETRAINED, parse_stage, stage_kind  # noqa: E402

#: Widths (inches) of a figure in one column and across both columns of a two-column paper.
SINGLE_COLUMN = 3.5
DOUBLE_COLUMN = 7.0
#: The smallest font (points) any text may have at print size.
MIN_FONT_PT = 7.0
#: Slack (inches) for the saved, tightly cropped figure beyond its column width.
WIDTH_SLACK = 0.05

#: Okabe & Ito (2008) colour-blind-safe palette.
OKABE_ITO = {
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
    "black": "#000000",
}
#: Colours by stage group: pretrained, then one per finetuning dataset.
STAGE_COLOURS = (
    "#999999",
    OKABE_ITO["blue"],
    OKABE_ITO["orange"],
    OKABE_ITO["bluish_green"],
    OKABE_ITO["reddish_purple"],
    OKABE_ITO["vermillion"],
)
STAGE_MARKERS = ("o", "s", "^", "D", "v", "P")
#: The pretrained network's marker, and the trained networks' by the position of their seed among the run's
#: seeds (:func:`seed_marker`), where figures tell seeds apart.
PRETRAINED_MARKER = "D"
SEED_MARKERS = ("o", "s", "^", "v", "P", "X", "<", ">")
#: rcParams of every figure: 8 pt text, 7 pt ticks and legends, vector (Type 42) fonts in PDFs.
STYLE = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "figure.titlesize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "grid.alpha": 0.3,
    "axes.linewidth": 0.6,
    "lines.linewidth": 1.0,
    "legend.frameon": False,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
}
WIDTHS = {"single": SINGLE_COLUMN, "double": DOUBLE_COLUMN}


def paper_style(**overrides) -> contextlib.AbstractContextManager:
    """Context in which to create a figure and its artists (fonts are fixed when a text is made)."""
    return plt.rc_context({**STYLE, **overrides})


def paper_figure(width: str = "double", height: float = 2.6, **subplots) -> tuple[Figure, object]:
    """``plt.subplots`` at a paper's ``width`` (``single`` = 3.5 in, ``double`` = 7 in) and ``height``
    (inches), with constrained layout; call it inside :func:`paper_style`."""
    if width not in WIDTHS:
        raise ValueError(f"width must be one of {sorted(WIDTHS)}, not {width!r}")
    return plt.subplots(figsize=(WIDTHS[width], height), layout="constrained", **subplots)


def message_figure(message: str) -> Figure:
    """A single-column figure that says ``message`` instead of a plot (a part of the run with nothing to show)."""
    with paper_style():
        fig, ax = paper_figure("single", 1.0)
        ax.axis("off")
        ax.text(0.5, 0.5, message, ha="center", va="center")
    return fig


def stage_words(stage: str, n_seeds: int | None = None) -> str:
    """A stage or stage group in words for titles and legends.

    ``pretrained``; ``ft-{dataset}`` (a group of seeds) -> "finetuned on {dataset}" plus "(mean of n
    seeds)" when ``n_seeds`` > 1 ("(1 seed)" for one), and ``scratch-{dataset}`` -> "trained from scratch on
    {dataset}" likewise; ``ft-{dataset}-seed{n}`` -> "finetuned on
    {dataset}, seed n"; ``scratch-{dataset}-seed{n}`` -> "trained from scratch on {dataset}, seed n".
    """
    if stage == PRETRAINED:
        return "pretrained"
    if stage.startswith(("ft-", "scratch-")) and "-seed" not in stage:
        kind, _, dataset = stage.partition("-")
        words = f"{'finetuned' if kind == 'ft' else 'trained from scratch'} on {dataset}"
        if n_seeds is None:
            return words
        return f"{words} (mean of {n_seeds} seeds)" if n_seeds > 1 else f"{words} (1 seed)"
    dataset, seed = parse_stage(stage)
    verb = "finetuned on" if stage_kind(stage) == "finetuned" else "trained from scratch on"
    return f"{verb} {dataset}, seed {seed}"


def seed_marker(seed: int, seeds: list[int]) -> str:
    """The marker of ``seed``: by its position among ``seeds`` (cycled when there are more than markers)."""
    return SEED_MARKERS[seeds.index(seed) % len(SEED_MARKERS)]


def network_colour(dataset: str | None, datasets: list[str]) -> str:
    """The colour of a network: grey for the pretrained one (``dataset`` None), else that of its finetuning
    dataset among ``datasets`` (cycled, never the pretrained grey)."""
    if dataset is None:
        return STAGE_COLOURS[0]
    return STAGE_COLOURS[1 + datasets.index(dataset) % (len(STAGE_COLOURS) - 1)]


def _visible_texts(fig: Figure) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t.get_figure() is not None]


def print_size_problems(fig: Figure) -> list[str]:
    """What would print badly: the saved (tightly cropped) figure wider than 7 in, or a visible text
    under 7 pt. Fonts of a too wide figure are scaled as it would be to fit the page; empty when it prints well."""
    fig.canvas.draw()
    width = fig.get_tightbbox(fig.canvas.get_renderer()).width
    problems = []
    if width > DOUBLE_COLUMN + WIDTH_SLACK:
        problems.append(f"figure is {width:.2f} in wide, more than a page's {DOUBLE_COLUMN} in")
    scale = 1.0 if width <= DOUBLE_COLUMN + WIDTH_SLACK else DOUBLE_COLUMN / width
    for text in _visible_texts(fig):
        size = text.get_fontsize() * scale
        if size < MIN_FONT_PT - 1e-6:
            problems.append(f"text {text.get_text()[:40]!r} prints at {size:.1f} pt (< {MIN_FONT_PT:g} pt)")
    return problems


def smallest_font(fig: Figure) -> float:
    """The smallest font size (pt, unscaled) of any visible text of ``fig``."""
    return min(t.get_fontsize() for t in _visible_texts(fig))


def figure_stem(png: str | os.PathLike, pdf: str | os.PathLike) -> Path:
    """The common stem of a figure's two outputs; ValueError unless they are ``<stem>.png`` and ``<stem>.pdf``."""
    stem = Path(png).with_suffix("")
    if Path(pdf).with_suffix("") != stem or Path(png).suffix != ".png" or Path(pdf).suffix != ".pdf":
        raise ValueError(f"outputs {str(png)!r} and {str(pdf)!r} must be <stem>.png and <stem>.pdf")
    return stem


#: The formats :func:`save_figure` writes, with the metadata that keeps each file free of timestamps.
FIGURE_FORMATS = {
    "png": {"Software": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
    "svg": {"Date": None, "Creator": None},
}


def save_figure(
    fig: Figure, stem: str | os.PathLike, *, dpi: int = 300, formats: tuple[str, ...] = ("png", "pdf")
) -> tuple[Path, ...]:
    """Write ``stem.png`` and ``stem.pdf`` (or the given :data:`FIGURE_FORMATS`) atomically (TrueType fonts in the
    PDF, fixed ids in the SVG, no timestamps); close the figure. Returns the paths in the order of ``formats``.

    ValueError (nothing written) when :func:`print_size_problems` finds any or a format is unknown.
    """
    stem = Path(stem)
    unknown = [f for f in formats if f not in FIGURE_FORMATS]
    if unknown:
        plt.close(fig)
        raise ValueError(f"figure {stem}: unknown format(s) {unknown} (known: {', '.join(FIGURE_FORMATS)})")
    problems = print_size_problems(fig)
    if problems:
        plt.close(fig)
        raise ValueError(f"figure {stem}: not fit for print: " + "; ".join(problems))
    paths = []
    fixed = {**{k: STYLE[k] for k in ("pdf.fonttype", "ps.fonttype")}, "svg.hashsalt": "biastransfer"}
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        with atomic_path(path) as tmp, plt.rc_context(fixed):
            fig.savefig(tmp, format=fmt, dpi=dpi, metadata=FIGURE_FORMATS[fmt], bbox_inches="tight", pad_inches=0.02)
        paths.append(path)
    plt.close(fig)
    return tuple(paths)
