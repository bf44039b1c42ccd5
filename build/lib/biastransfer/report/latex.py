"""LaTeX plumbing of the report's tables: booktabs ``tabular`` bodies and the standalone documents around them.

:func:`tabular` lays out one header row and the body rows; :func:`standalone_document` wraps a ``tabular`` (or
``longtable``) in a document that compiles alone with ``pdflatex``; :func:`tabular_of` and :func:`latex_fragment`
take the environment back out, for ``\\input`` into a paper's own ``table``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

#: Vector (Type 1) fonts only: T1-encoded Latin Modern where the lmodern package is installed; otherwise
#: the default OT1 Computer Modern, whose Type 1 outlines come with TeX itself (T1 without lmodern or
#: cm-super would print bitmap Type 3 fonts).
VECTOR_FONTS = "\\IfFileExists{lmodern.sty}{\\usepackage[T1]{fontenc}\\usepackage{lmodern}}{}"


def standalone_document(body: str, caption: str, *, landscape: bool = False) -> str:
    """Wrap a ``tabular`` (or ``longtable``) in a minimal document that compiles with ``pdflatex``; a
    ``tabular`` wider than the text is scaled down to fit the page (a ``longtable`` breaks across pages)."""
    orientation = ",landscape" if landscape else ""
    if "longtable" in body:
        float_open, float_close, caption_line = "", "", ""
    else:
        float_open = "\\begin{table}[ht]\n\\centering\n"
        float_close = "\\end{table}\n"
        caption_line = f"\\caption*{{{caption}}}\n"
        body = f"\\resizebox{{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}}{{!}}{{%\n{body.rstrip()}}}\n"
    return (
        "\\documentclass[10pt]{article}\n"
        f"\\usepackage[margin=1.5cm{orientation}]{{geometry}}\n"
        f"{VECTOR_FONTS}\n"
        "\\usepackage{booktabs}\n"
        "\\usepackage{longtable}\n"
        "\\usepackage{caption}\n"
        "\\usepackage{graphicx}\n"
        "\\pagestyle{empty}\n"
        "\\begin{document}\n"
        f"{float_open}{caption_line}{body}{float_close}"
        "\\end{document}\n"
    )


def latex_fragment(document: str) -> str:
    """The ``tabular`` of a document made here, for ``\\input`` into a paper's own ``table``: its caption
    as a comment on top (every line a comment), then the environment (needs ``booktabs``)."""
    match = re.search(r"^\\caption\*\{(.*)\}$", document, flags=re.M)
    caption = match.group(1) if match else ""
    notes = ["Table fragment for \\input{...} inside a table environment; needs \\usepackage{booktabs}."]
    notes += [f"Caption: {caption}"] if caption else []
    return "".join(f"% {line}\n" for note in notes for line in note.splitlines()) + tabular_of(document) + "\n"


def tabular_of(document: str) -> str:
    """The ``tabular`` or ``longtable`` environment inside a document made here."""
    match = re.search(r"\\begin\{(tabular|longtable)\}.*?\\end\{\1\}", document, flags=re.S)
    if match is None:
        raise ValueError("no tabular or longtable environment in the document")
    return match.group(0)


def table_rows(cells: Iterable[Sequence[str]]) -> str:
    """Rows of LaTeX cells, ``&``-separated, each ending in ``\\\\`` and a newline."""
    return "".join(" & ".join(row) + " \\\\\n" for row in cells)


def tabular(columns: str, head: Sequence[str], cells: Iterable[Sequence[str]]) -> str:
    """A booktabs ``tabular`` with column spec ``columns``, one header row ``head`` and the rows ``cells``
    (each a list of LaTeX cells), ending in a newline."""
    top = f"\\begin{{tabular}}{{{columns}}}\n\\toprule\n" + table_rows([head]) + "\\midrule\n"
    return top + table_rows(cells) + "\\bottomrule\n\\end{tabular}\n"
