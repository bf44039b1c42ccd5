"""The reports' figures and tables, each declared once.

A rule file declares each artefact it makes with :meth:`Artefacts.declare` (rules/artefacts.smk wraps it):
its kind, report section, title, caption, files by role and the wildcard values it is made for. From that
one declaration come rule all's targets (:meth:`Artefacts.targets`), the static report's items
(:meth:`Artefacts.items`, the html_report rule's params) and the outputs each rule marks for Snakemake's
own report (:meth:`Artefact.marked`, used by rules/artefacts.smk).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

#: The kinds of artefact: a figure (an image), a table (shown from its CSV) and a page (an HTML page of its
#: own, such as the findings, copied into the static report and linked from its overview).
KINDS = ("figure", "table", "page")

#: The most iEAT rows (tests x models x networks) one forest plot draws and the landing page shows: a run with
#: more gets one forest plot per analysis set (rule plot_forest, ``Plan.forest_sets``), each linked from it.
FOREST_ROWS = 40

#: File roles, in the order their download links appear, with the links' words.
FILE_ROLES = {
    "png": "image",
    "pdf": "PDF",
    "svg": "SVG",
    "csv": "CSV",
    "fragment": "LaTeX tabular (\\input)",
    "document": "LaTeX document",
    "html": "page",
}

#: Roles that Snakemake's report shows (the PDF duplicates the image and the fragment the document).
MARKED_ROLES = ("png", "csv", "document", "html")

#: What each role needs to be shown in the static report.
REQUIRED_ROLES = {"figure": ("png",), "table": ("csv",), "page": ("html",)}

#: Words for each wildcard in Snakemake's report labels.
LABEL_WORDS = {"analysis_set": "analysis set", "model": "model", "dataset": "finetuned on"}

#: The runs an artefact belongs to: a bias-transfer run (pretrained and finetuned networks: the demo, the
#: paper) or a model-zoo audit (pretrained networks only).
RUNS = ("transfer", "zoo")


def combinations(**values: Iterable[str]) -> list[dict[str, str]]:
    """Every combination of the given wildcard values, in order (the last name varies fastest)."""
    names = list(values)
    return [dict(zip(names, combo)) for combo in itertools.product(*(list(v) for v in values.values()))]


@dataclass(frozen=True)
class Artefact:
    """One figure, table or page of the reports, made once for each of its ``instances`` (wildcard values).

    ``section`` (and ``subsection``) place it in the reports, ``title`` names it; all three, and every file
    path, are templates of the instance's wildcards. ``caption`` is the path of its reStructuredText caption.
    """

    name: str
    kind: str
    section: str
    title: str
    caption: str
    files: Mapping[str, str]
    instances: Sequence[Mapping[str, str]] = field(default_factory=lambda: [{}])
    subsection: str | None = None
    run: str = "transfer"

    def __post_init__(self) -> None:
        where = f"report artefact {self.name!r}"
        if self.kind not in KINDS:
            raise ValueError(f"{where}: kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.run not in RUNS:
            raise ValueError(f"{where}: run must be one of {', '.join(RUNS)}, not {self.run!r}")
        unknown = sorted(set(self.files) - set(FILE_ROLES))
        if unknown:
            raise ValueError(f"{where}: unknown file role(s) {unknown} (known: {', '.join(FILE_ROLES)})")
        missing = [r for r in REQUIRED_ROLES[self.kind] if r not in self.files]
        if missing:
            raise ValueError(f"{where}: a {self.kind} needs a {missing[0]!r} file")
        for instance in self.instances:
            try:
                self._format(instance)
            except KeyError as error:
                raise ValueError(f"{where}: instance {dict(instance)} lacks wildcard {error}") from None

    def _format(self, instance: Mapping[str, str]) -> dict:
        return {
            "group": self.group.format(**instance),
            "title": self.title.format(**instance),
            "files": {role: path.format(**instance) for role, path in self.files.items()},
        }

    @property
    def group(self) -> str:
        """The static report's heading for it: the section, and the subsection after a comma."""
        return self.section if self.subsection is None else f"{self.section}, {self.subsection}"

    def targets(self) -> list[str]:
        """Every file of every instance."""
        return [path for instance in self.instances for path in self._format(instance)["files"].values()]

    def items(self) -> list[dict]:
        """The static report's items (report.site.ITEM_KEYS), one per instance."""
        return [
            {"kind": self.kind, "caption": self.caption, "wildcards": dict(instance), **self._format(instance)}
            for instance in self.instances
        ]

    def category(self) -> str:
        """Its category in Snakemake's report: tables gather under "Tables", figures and pages by section."""
        return "Tables" if self.kind == "table" else self.section

    def subcategory(self) -> str | None:
        """Its subcategory in Snakemake's report: a table's section, or the subsection."""
        return self.section if self.kind == "table" else self.subsection

    def labels(self) -> dict[str, str]:
        """Its labels in Snakemake's report: its wildcards in words, then its title."""
        wildcards = dict.fromkeys(name for instance in self.instances for name in instance)
        return {**{LABEL_WORDS.get(w, w.replace("_", " ")): f"{{{w}}}" for w in wildcards}, self.kind: self.title}

    def marked(self) -> dict[str, bool]:
        """For each file role, whether Snakemake's report shows it."""
        return {role: role in MARKED_ROLES for role in self.files}


class Artefacts(dict):
    """Every declared artefact by name, in declaration order (the static report's order)."""

    def declare(self, name: str, **spec) -> Artefact:
        """Declare an artefact (the fields of :class:`Artefact`); a name is declared once."""
        if name in self:
            raise ValueError(f"report artefact {name!r} is declared twice")
        self[name] = Artefact(name=name, **spec)
        return self[name]

    def of_run(self, run: str) -> list[Artefact]:
        return [a for a in self.values() if a.run == run]

    def targets(self, run: str = "transfer") -> list[str]:
        """Every file of every artefact of a run."""
        return [path for a in self.of_run(run) for path in a.targets()]

    def items(self, run: str = "transfer") -> list[dict]:
        """The static report's items of a run, in declaration order."""
        return [item for a in self.of_run(run) for item in a.items()]

    def files(self, *names: str) -> list[str]:
        """The files of the named artefacts (for another run's target list)."""
        return [path for name in names for path in self[name].targets()]
