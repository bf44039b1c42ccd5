"""Image decoding: the one function that every loader (training, embedding, contact sheets) calls.

Pillow's ``convert("RGB")`` clips 16-bit grayscale samples (mode ``I;16``) to 255, so such an image
comes out white, and it ignores the EXIF orientation tag that cameras write instead of rotating the
pixels. :func:`load_rgb` applies the orientation (``ImageOps.exif_transpose``) and keeps the high byte
of 16-bit samples, as Pillow itself does for 16-bit colour PNGs.
"""

from __future__ import annotations

import os
from typing import BinaryIO

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

_SIXTEEN_BIT = ("I;16", "I;16L", "I;16B", "I;16N")


def unsupported_mode(mode: str) -> str | None:
    """Why an image of Pillow pixel ``mode`` cannot be decoded to 8-bit RGB, or None if it can."""
    if mode in ("I", "F"):
        kind = "32-bit integer" if mode == "I" else "floating-point"
        return f"pixel mode {mode} ({kind} samples) has no defined 8-bit scale; save it as 8- or 16-bit"
    return None


def load_rgb(
    source: str | os.PathLike | BinaryIO, min_side: int | None = None, *, name: str | os.PathLike | None = None
) -> Image.Image:
    """The image at ``source`` (a path, or a binary file object such as a cached image's bytes) as 8-bit
    RGB, upright: EXIF orientation applied, 16-bit samples scaled to 8 bits. ``min_side``: a JPEG may be
    decoded at a reduced scale (PIL's draft mode, in the DCT domain) whose short side is still at least
    ``min_side``; other formats decode at full size. FileNotFoundError or ValueError naming ``source`` (or
    ``name``, the file a file object's bytes came from) for a missing, unreadable or unsupported file."""
    name = source if name is None else name
    try:
        with Image.open(source) as img:
            why = unsupported_mode(img.mode)
            if not why:
                img = ImageOps.exif_transpose(_draft(img, min_side))  # a loaded copy, upright
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"image file {name} does not exist") from exc
    except UnidentifiedImageError as exc:  # Pillow's message names a file object by its repr
        raise ValueError(f"image file {name} is corrupt or not an image: Pillow cannot identify it") from exc
    except (Image.DecompressionBombError, OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"image file {name} is corrupt or not an image: {exc}") from exc
    if why:
        raise ValueError(f"image file {name}: {why}")
    if img.mode in _SIXTEEN_BIT:
        img = Image.fromarray((np.asarray(img, dtype=np.uint16) >> 8).astype(np.uint8), "L")
    return img.convert("RGB")


def _draft(img: Image.Image, min_side: int | None) -> Image.Image:
    if min_side is not None and img.format == "JPEG":
        w, h = img.size
        scale = min(w, h) / min_side
        if scale >= 2:
            img.draft("RGB", (w / scale, h / scale))
    return img
