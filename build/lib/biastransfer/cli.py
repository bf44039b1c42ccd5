"""``biastransfer``: the statistics on your own embeddings, without the workflow.

Input files are embeddings Parquet files (columns image_id, class, embedding; see docs/formats.md).

  biastransfer info EMB.parquet
  biastransfer similarity EMB.parquet [-o similarities.csv]
  biastransfer ieat EMB.parquet --X man --Y woman --A car --B surfboard [--permutations 100000] [--bootstrap 2000]
  biastransfer bts BEFORE.parquet AFTER.parquet [AFTER2.parquet ...] [--intra CLASS ...] [--inter P:Q ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import pandas as pd

from biastransfer.embeddings import read_embeddings
from biastransfer.report.formatting import p_text
from biastransfer.stages import PRETRAINED
from biastransfer.stats.bootstrap import BOOTSTRAP
from biastransfer.stats.change_tables import stage_replicates
from biastransfer.stats.floors import min_resampled_size
from biastransfer.stats.ieat import PERMUTATIONS
from biastransfer.stats.results import bts_table, ieat_table, similarity_table


def _check_output(output: str | None) -> None:
    """Refuse an output path that is a directory or a symbolic link, before any work."""
    if output and os.path.islink(output):
        raise ValueError(f"output {output} is a symbolic link; refusing to replace it (give the file it points to)")
    if output and os.path.isdir(output):
        raise ValueError(f"output {output} is a directory; give a file name such as {os.path.join(output, 'out.csv')}")


def _require(table, path: str, classes, at_least: int, what: str) -> None:
    """Each of ``classes`` must be in ``table`` with at least ``at_least`` images for ``what``."""
    sizes = pd.Series(table.classes).value_counts()
    for name in classes:
        n = int(sizes.get(name, 0))
        if n == 0:
            raise ValueError(f"{path}: class {name!r} is not in the file (classes: {', '.join(table.class_names)})")
        if n < at_least:
            raise ValueError(
                f"{path}: class {name!r} has {n} image{'s' if n != 1 else ''}; {what} needs at least {at_least}"
            )


def _similarities(path: str, **kwargs) -> pd.DataFrame:
    table = read_embeddings(path)
    _require(table, path, table.class_names, 2, "intra-class similarity")
    return similarity_table(table, **kwargs)


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
    frame = _similarities(args.embeddings, method=args.method, iterations=args.iterations, seed=args.seed)
    _emit(frame, args.output)


def _ieat(args) -> None:
    table = read_embeddings(args.embeddings)
    _require(table, args.embeddings, (args.X, args.Y, args.A, args.B), 1, "the iEAT")
    test = {"name": args.name or f"{args.A}_vs_{args.B}", "X": args.X, "Y": args.Y, "A": args.A, "B": args.B}
    result = ieat_table(
        table,
        [test],
        permutations=args.permutations,
        alternative=args.alternative,
        method=args.method,
        seed=args.seed,
        bootstrap=args.bootstrap,
        ci_level=args.ci_level,
    )
    _emit(result, args.output)
    r = result.iloc[0]
    interval = f", {r.ci_level:.0%} CI {r.ci_low:.3f} to {r.ci_high:.3f}" if args.bootstrap else ""
    if args.bootstrap and min(r.n_x, r.n_y, r.n_a, r.n_b) < min_resampled_size(r.ci_level):
        interval = f", {r.ci_level:.0%} CI not estimable (a set under {min_resampled_size(r.ci_level)} images)"
    print(
        f"{test['name']}: d = {r.effect_size:.3f}{interval}; {r.alternative} {p_text(r.pvalue, r.pvalue_floor)}, "
        f"two-sided {p_text(r.pvalue_two_sided, r.pvalue_floor)}",
        file=sys.stderr if not args.output else sys.stdout,
    )


def _pair(text: str) -> tuple[str, str]:
    p, sep, q = text.partition(":")
    if not sep or not p or not q:
        raise argparse.ArgumentTypeError(f"a pair is written P:Q, got {text!r}")
    return p, q


def _bts(args) -> None:
    before = _similarities(args.before)
    after = {i: _similarities(path) for i, path in enumerate(args.after)}
    lists = {k: v for k, v in {"intra": args.intra, "inter": args.inter}.items() if v}
    replicates = None
    if args.bootstrap:
        stages = {PRETRAINED: read_embeddings(args.before), **{i: read_embeddings(p) for i, p in enumerate(args.after)}}
        replicates = stage_replicates(stages, lists, bootstrap=args.bootstrap, seed=args.seed)
    result = bts_table(before, after, lists, pvalue=args.pvalue, replicates=replicates, ci_level=args.ci_level)
    result["seed"] = [args.after[s] if s != "pooled" else "pooled" for s in result["seed"]]
    _emit(result.rename(columns={"seed": "after"}), args.output)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="biastransfer", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
    for role, what in (
        ("X", "first target class"),
        ("Y", "second target class"),
        ("A", "first attribute class"),
        ("B", "second attribute class"),
    ):
        p.add_argument(f"--{role}", required=True, help=what)
    p.add_argument("--name", help="test name in the output")
    p.add_argument("--permutations", type=int, default=PERMUTATIONS)
    p.add_argument("--alternative", choices=("greater", "less", "two-sided"), default="greater")
    p.add_argument("--method", choices=("auto", "exact", "permutation", "normal"), default="auto")
    p.add_argument("--seed", type=int, default=0, help="seed of the permutations and of the bootstrap")
    p.add_argument("--bootstrap", type=int, default=BOOTSTRAP, help="bootstrap replicates for the CI of d (0: none)")
    p.add_argument("--ci-level", type=float, default=0.95, help="level of the interval")
    p.add_argument("-o", "--output", help="write CSV here instead of printing")
    p.set_defaults(func=_ieat)

    p = sub.add_parser("bts", help="Bias Transfer Score between embeddings before and after finetuning")
    p.add_argument("before", help="embeddings of the pretrained model")
    p.add_argument("after", nargs="+", help="embeddings of finetuned models (several seeds are pooled too)")
    p.add_argument("--intra", nargs="+", metavar="CLASS", help="classes to rank (default: all)")
    p.add_argument("--inter", nargs="+", type=_pair, metavar="P:Q", help="class pairs to rank (default: all)")
    p.add_argument(
        "--pvalue",
        choices=("asymptotic", "permutation"),
        default="permutation",
        help="p-value in the pvalue column (the t approximation is always in pvalue_t)",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=BOOTSTRAP,
        help="bootstrap replicates for the CI of rho (images resampled within classes; 0: none)",
    )
    p.add_argument("--ci-level", type=float, default=0.95, help="level of the interval")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    p.add_argument("-o", "--output", help="write CSV here instead of printing")
    p.set_defaults(func=_bts)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``biastransfer`` command; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        _check_output(getattr(args, "output", None))
        args.func(args)
    except Exception as exc:  # every failure is one line on stderr, without a traceback
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        if not isinstance(exc, (ValueError, KeyError, OSError)):
            message = f"{type(exc).__name__}: {message}"
        print(f"biastransfer {args.command}: error: {' '.join(str(message).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
