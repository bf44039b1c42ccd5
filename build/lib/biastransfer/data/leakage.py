"""The leakage check: no analysis image may appear in a finetuning split of the same dataset."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd


def check_no_leakage(manifest: pd.DataFrame, splits: Mapping[str, pd.DataFrame], *, what: str = "analysis") -> None:
    """Raise ValueError listing every analysis image (``what``: the images ``manifest`` holds, e.g. ``test``
    for an evaluation split) found in a split.

    Images are compared by ``image_id`` and, where both tables have a ``sha256`` column, also by file
    hash (the same picture under another id). ``splits`` maps split names to their frames.
    """
    if "image_id" not in manifest.columns:
        raise ValueError("manifest: no 'image_id' column")
    ids = set(manifest["image_id"].astype(str))
    hashes = set(manifest["sha256"].dropna().astype(str)) - {""} if "sha256" in manifest.columns else set()
    problems = []
    for name, frame in splits.items():
        if "image_id" not in frame.columns:
            raise ValueError(f"split {name!r}: no 'image_id' column")
        leaked = sorted(set(frame["image_id"].astype(str)) & ids)
        if leaked:
            shown = ", ".join(leaked[:20]) + (f" (+{len(leaked) - 20} more)" if len(leaked) > 20 else "")
            problems.append(f"split {name!r}: {len(leaked)} {what} image id(s): {shown}")
        if hashes and "sha256" in frame.columns:
            hit = frame[frame["sha256"].astype(str).isin(hashes)]
            if not hit.empty:
                shown = ", ".join(f"{i} ({h[:12]})" for i, h in zip(hit["image_id"][:20], hit["sha256"][:20]))
                article = "an" if what[:1] in "aeiou" else "a"
                problems.append(f"split {name!r}: {len(hit)} image(s) with {article} {what} image's sha256: {shown}")
    if problems:
        raise ValueError(f"{what} images leak into finetuning splits:\n  " + "\n  ".join(problems))
