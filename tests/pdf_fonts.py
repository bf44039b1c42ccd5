"""The font types a PDF embeds: ``pdffonts`` (poppler) where it is installed, else a scan of the PDF's
objects (zlib-inflated streams included, where pdfTeX puts its font dictionaries)."""

from __future__ import annotations

import re
import shutil
import subprocess
import zlib
from pathlib import Path

_SUBTYPE = re.compile(rb"/Subtype\s*/(Type1C?|Type3|TrueType|Type0|CIDFontType[02]|MMType1|OpenType)\b")

_PDFFONTS_TYPE = re.compile(r"\s(Type 1C?|Type 3|TrueType|CID Type 0C?|CID TrueType)\s")


def font_types(pdf: Path) -> set[str]:
    """``{"Type1", ...}``: every font type in ``pdf`` (a bitmap font is ``"Type3"``)."""
    pdffonts = shutil.which("pdffonts")
    if pdffonts:
        lines = subprocess.run([pdffonts, str(pdf)], capture_output=True, text=True, check=True).stdout.splitlines()[2:]
        return {m.group(1).replace(" ", "") for line in lines if (m := _PDFFONTS_TYPE.search(line))}
    data = pdf.read_bytes()
    chunks = [data]
    for match in re.finditer(rb"stream\r?\n(.*?)endstream", data, flags=re.S):
        try:
            chunks.append(zlib.decompress(match.group(1)))
        except zlib.error:
            continue
    return {m.decode() for chunk in chunks for m in _SUBTYPE.findall(chunk)}
