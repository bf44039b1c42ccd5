"""An intervention on the finetuning data: the training split of ``from`` rebalanced beside its objects.

Reads the source dataset's training split and its per-image attribute file, rebalances the listed objects
to the target by subsample or reweight (biastransfer.data.rebalance), and writes the intervention's
training split (the images kept), their sample weights (1 each for a subsample), the co-occurrence of each
object with each attribute value before and after (images, share, target), and the validation split of
``from`` under the intervention's name (the same images, untouched). A target the data cannot reach is an
error naming the object and the attribute, before anything is written; an intervention that changes nothing
(every image kept at weight 1: the data is already at its targets) is a warning, and the table says so.

Standalone: python workflow/scripts/intervention.py --train results/splits/S/train.parquet
--attributes results/splits/S/train_attributes.parquet --val results/splits/S/val.parquet
--spec '{"kind": "intervention", "from": "S", "objects": ["surfboard"], "target": "independent",
"method": "subsample", "seed": 0}' --intervention NAME --train_out T.parquet --val_out V.parquet
--weights W.parquet --cooccurrence C.csv
"""

import logging

from biastransfer.atomic import write_csv
from biastransfer.data.attributes import read_attributes
from biastransfer.data.rebalance import intervene, write_weights
from biastransfer.data.splits import Split, read_split, write_split
from biastransfer.hashing import file_digest
from biastransfer.scripting import run

log = logging.getLogger(__name__)


def main(
    train: str,
    attributes: str,
    val: str,
    spec: dict,
    intervention: str,
    train_out: str,
    val_out: str,
    weights: str,
    cooccurrence: str,
) -> None:
    split, attrs = read_split(train), read_attributes(attributes)
    if attrs.split_sha256 != file_digest(train):
        raise ValueError(f"{attributes}: describes another version of the split than {train}")
    new, sample_weights, table = intervene(split, attrs, spec, intervention)
    source_val = read_split(val)
    write_split(train_out, new)
    write_split(val_out, Split(intervention, "val", source_val.classes, source_val.frame))
    write_weights(weights, sample_weights, dataset=intervention, split_sha256=file_digest(train_out))
    write_csv(cooccurrence, table)
    after = table[table["when"] == "after"]
    for row in after.itertuples():
        log.info(
            "%s beside %s: %.1f images, share %.3f (target %.3f)",
            row.attribute,
            row.object,
            row.images,
            row.share,
            row.target,
        )
    log.info("%s: %d of %d training images kept (%s)", intervention, len(new.frame), len(split.frame), spec["method"])
    if not table["changed"].iloc[0]:
        log.warning(
            "%s changed nothing in the training split of %s (%d of %d images kept, every weight 1: each "
            "object is already within one image of its target), so its networks learn from the same data as "
            "the untouched ones and any difference between them is not the intervention's",
            intervention,
            split.dataset,
            len(new.frame),
            len(split.frame),
        )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
