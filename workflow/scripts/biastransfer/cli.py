"""``biastransfer``: the statistics on your own embeddings, without the workflow.

Input files are embeddings Parquet files (columns image_id, class, embedding; see docs/formats.md).

  biastransfer info EMB.parquet
  biastransfer similarity EMB.parquet [-o similarities.csv]
  biastransfer ieat EMB.parquet --X man --Y woman --A car --B surfboard [--permutations 100000]
  biastransfer bts BEFORE.parquet AFTER.parquet [AFTER2.parquet ...] [--intra CLASS ...] [--inter P:Q ...]
"""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from biastransfer.stats.results import bts_table, ieat_table, similarity_table
from biastransfer.embeddings import read_embeddings


def _emit(frame: pd.DataFrame, output: str | None) -> None:
    if output:
        from biastransfer.atomic import write_csv

        write_csv(output, frame)
        print(f"wrote {len(frame)} rows to {output}", file=sys.stderr)
    else:
        with pd.option_context("display.max_rows", None, "display.width", 200, "display.float_format", "{:.4g}".format):
            print(frame.to_string(index=False))


def _info(args) -> None:
    table = read_embeddings(args.embeddings)
    sizes = pd.Series(table.classes).value_counts(sort=False)
    print(f"{args.embeddings}: {len(table.image_ids)} rows x {table.embeddings.shape[1]} dims")
    print(sizes.rename_axis("class").reset_index(name="n").to_string(index=False))
    if table.metadata:
        print(json.dumps(table.metadata, indent=2, sort_keys=True))


def _similarity(args) -> None:
    table = read_embeddings(args.embeddings)
    _emit(similarity_table(table, method=args.method, iterations=args.iterations, seed=args.seed), args.output)


def _ieat(args) -> None:
    table = read_embeddings(args.embeddings)
    test = {"name": args.name or f"{args.A}_vs_{args.B}", "X": args.X, "Y": args.Y, "A": args.A, "B": args.B}
    result = ieat_table(
        table, [test], permutations=args.permutations, alternative=args.alternative, method=args.method, seed=args.seed
    )
    _emit(result, args.output)


def _pair(text: str) -> tuple[str, str]:
    p, sep, q = text.partition(":")
    if not sep or not p or not q:
        raise argparse.ArgumentTypeError(f"a pair is written P:Q, got {text!r}")
    return p, q


def _bts(args) -> None:
    before = similarity_table(read_embeddings(args.before))
    after = {i: similarity_table(read_embeddings(path)) for i, path in enumerate(args.after)}
    lists = {"intra": args.intra, "inter": args.inter}
    result = bts_table(before, after, {k: v for k, v in lists.items() if v}, pvalue=args.pvalue)
    result["seed"] = [args.after[s] if s != "pooled" else "pooled" for s in result["seed"]]
    _emit(result.rename(columns={"seed": "after"}), args.output)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="biastransfer", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("info", help="class sizes and provenance of an embeddings file")
    p.add_argument("embeddings")
    p.set_defaults(func=_info)

    p = sub.add_parser("similarity", help="intra-class and inter-class similarities")
    p.add_argument("embeddings")
    p.add_argument("--method", choices=("exact", "sampled"), default="exact")
    p.add_argument("--iterations", type=int, default=50, help="sampled method only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", help="write CSV here instead of printing")
    p.set_defaults(func=_similarity)

    p = sub.add_parser("ieat", help="Image Embedding Association Test")
    p.add_argument("embeddings")
    for role, what in (("X", "first target class"), ("Y", "second target class"), ("A", "first attribute class"), ("B", "second attribute class")):
        p.add_argument(f"--{role}", required=True, help=what)
    p.add_argument("--name", help="test name in the output")
    p.add_argument("--permutations", type=int, default=100_000)
    p.add_argument("--alternative", choices=("greater", "less", "two-sided"), default="greater")
    p.add_argument("--method", choices=("auto", "exact", "permutation", "normal"), default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", help="write CSV here instead of printing")
    p.set_defaults(func=_ieat)

    p = sub.add_parser("bts", help="Bias Transfer Score between embeddings before and after finetuning")
    p.add_argument("before", help="embeddings of the pretrained model")
    p.add_argument("after", nargs="+", help="embeddings of finetuned models (several seeds are pooled too)")
    p.add_argument("--intra", nargs="+", metavar="CLASS", help="classes to rank (default: all)")
    p.add_argument("--inter", nargs="+", type=_pair, metavar="P:Q", help="class pairs to rank (default: all)")
    p.add_argument("--pvalue", choices=("asymptotic", "permutation"), default="asymptotic")
    p.add_argument("-o", "--output", help="write CSV here instead of printing")
    p.set_defaults(func=_bts)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``biastransfer`` command; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        print(f"biastransfer {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
