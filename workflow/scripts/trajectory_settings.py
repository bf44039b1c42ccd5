"""What a finetune job embeds after which epochs (``finetune.trajectory``), and with or without bf16
autocast (``analysis.embed.amp``), as a JSON file it reads.

``analysis_sets`` and ``epochs`` are empty when the trajectory is off. Standalone:
python workflow/scripts/trajectory_settings.py --analysis_sets synthetic --epochs 1 2 --amp true --settings S.json
"""

import json

from biastransfer.atomic import write_text
from biastransfer.scripting import run


def main(analysis_sets: list, epochs: list, amp: bool, settings: str) -> None:
    record = {"analysis_sets": analysis_sets, "epochs": [int(e) for e in epochs], "amp": bool(amp)}
    write_text(settings, json.dumps(record) + "\n")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
