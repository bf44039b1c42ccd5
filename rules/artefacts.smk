# The reports' figures, tables and pages, each declared once (biastransfer.report.artefacts). A rule file
# declares the artefacts it makes with report_artefact(...) (tables made by make_tables.py with
# table_artefact(...): rules/tables.smk makes one rule for each), and the rule that makes one names its
# outputs with artefact_outputs(...). Rule all asks for ARTEFACTS.targets(); html_report shows ARTEFACTS.items().
from biastransfer.report.artefacts import Artefacts, combinations  # noqa: E402

ARTEFACTS = Artefacts()

# What each make_tables.py table reads (its summary and inputs), by table (= artefact) name; what it is told
# is its settings (biastransfer.workflow.rules.report.TableSettings).
MADE_TABLES = {}


def report_artefact(name, caption, **spec):
    """Declare a figure, table or page (fields of report.artefacts.Artefact); ``caption`` is a file of
    workflow/report/."""
    return ARTEFACTS.declare(
        name,
        caption=os.path.join(BASEDIR, "workflow", "report", caption),
        **spec,
    )


def table_artefact(name, summary, stem, inputs=None, **spec):
    """Declare a table made by make_tables.py (kind ``name``, rules/tables.smk) from ``summary`` (and the
    named ``inputs``): its CSV, LaTeX fragment and standalone document are ``{stem}.csv``,
    ``{stem}_tabular.tex`` and ``{stem}.tex``."""
    MADE_TABLES[name] = {"summary": summary, "inputs": inputs or {}}
    files = {
        "csv": f"{stem}.csv",
        "fragment": f"{stem}_tabular.tex",
        "document": f"{stem}.tex",
    }
    return report_artefact(name, kind="table", files=files, **spec)


def artefact_outputs(*names, prefixed=False):
    """The named artefacts' files as a rule's named outputs (by role, or ``{name}_{role}`` with ``prefixed``);
    those Snakemake's report shows are marked for it with the artefact's caption, category and labels.
    """
    outputs = {}
    for name in names:
        artefact = ARTEFACTS[name]
        for role, path in artefact.files.items():
            key = f"{name}_{role}" if prefixed else role
            if key in outputs:
                raise ValueError(f"artefact_outputs{names}: output {key!r} twice")
            marking = dict(
                caption=artefact.caption,
                category=artefact.category(),
                subcategory=artefact.subcategory(),
                labels=artefact.labels(),
            )
            outputs[key] = report(path, **marking) if artefact.marked()[role] else path
    return outputs
