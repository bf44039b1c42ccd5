"""Every report caption (workflow/report/*.rst, Jinja templates) renders as reStructuredText without errors,
with the paper's filled config (a caption reads the config and its wildcards, never its rule's params: the
static report has none); a docutils error would otherwise show inside the HTML report (an unescaped |d|
is a substitution reference, for instance)."""

from types import SimpleNamespace

import docutils.core
import jinja2
import pytest
from conftest import ROOT

from biastransfer.workflow import config as cfg

CAPTIONS = sorted((ROOT / "workflow" / "report").glob("*.rst"))


class Value(str):
    """Any wildcard: a word, whatever its name."""

    def __getattr__(self, name):
        return Value("x")

    def __getitem__(self, key):
        return Value("x")


@pytest.mark.parametrize("path", CAPTIONS, ids=lambda p: p.name)
def test_caption_renders_without_docutils_errors(path):
    config = cfg.read_configs([ROOT / "config" / "paper.yaml", ROOT / "config" / "claims.yaml"])
    cfg.check_config(config)
    snakemake = SimpleNamespace(config=config, wildcards=Value("x"))
    text = jinja2.Environment().from_string(path.read_text()).render(snakemake=snakemake)
    docutils.core.publish_doctree(text, settings_overrides={"halt_level": 3, "report_level": 5})
