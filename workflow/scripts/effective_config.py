"""Write the configuration a run used (after schema defaults were filled in), as YAML and as an HTML
page for the report.

Standalone: python workflow/scripts/effective_config.py --settings '{"config": {"datasets": {}}}' --yaml_out C.yaml
--html C.html
"""

import html as html_lib

import yaml

from biastransfer.atomic import write_text
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import EffectiveConfigSettings


def main(settings: EffectiveConfigSettings, yaml_out: str, html: str) -> None:
    text = yaml.safe_dump(settings.config, sort_keys=False, default_flow_style=False)
    write_text(yaml_out, text)
    write_text(
        html, f"<html><body><h1>Configuration of this run</h1><pre>{html_lib.escape(text)}</pre></body></html>\n"
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
