"""Contact sheet of one analysis set: the first few images of every class, and the table of their sources.

Snakemake: rule plot_contact_sheet (rules/report.smk). Standalone, for a reviewer:
python workflow/scripts/plot_contact_sheet.py --manifest results/analysis_sets/coco/manifest.parquet
    --analysis_set coco --png out/contact_sheet.png --pdf out/contact_sheet.pdf --csv out/contact_sheet.csv
    --settings '{"per_class": 4}'
"""

import logging

from biastransfer.atomic import write_csv
from biastransfer.data.manifest import read_manifest
from biastransfer.report.gallery import contact_sheet, sheet_images
from biastransfer.report.style import figure_stem, save_figure
from biastransfer.scripting import run
from biastransfer.workflow.rules.report import ContactSheetSettings

log = logging.getLogger(__name__)


def main(manifest: str, analysis_set: str, png: str, pdf: str, csv: str, settings: ContactSheetSettings) -> None:
    stem = figure_stem(png, pdf)
    images = read_manifest(manifest)
    shown = sheet_images(images, settings.per_class)
    figure = contact_sheet(shown, analysis_set=analysis_set, counts=images["class"].value_counts().to_dict())
    written = save_figure(figure, stem)
    write_csv(csv, shown)
    log.info(
        "%d images of %d classes -> %s, %s", len(shown), shown["class"].nunique(), ", ".join(map(str, written)), csv
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
