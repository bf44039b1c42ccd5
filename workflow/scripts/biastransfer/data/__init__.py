"""Datasets (never torch).

The curated public API (docs/api.md); everything else stays in its module.

- The dataset kinds as modules (their functions share names): :mod:`coco`, :mod:`openimages`, :mod:`synthetic`
- Analysis-set manifests: :func:`read_manifest`, :func:`write_manifest`, :func:`validate_manifest`,
  :func:`verify_files`; your own images: :func:`analysis_set_manifest`, :func:`read_table`
- Finetuning splits: :func:`read_split`, :func:`write_split`, and the leakage check :func:`check_no_leakage`
- Downloads that resume and verify: :func:`fetch`, :class:`Download`
- Errors: :class:`ChecksumError`, :class:`DownloadError`, :class:`UserDataError`
"""

from biastransfer.data import coco, openimages, synthetic
from biastransfer.data.download import ChecksumError, Download, DownloadError, fetch
from biastransfer.data.leakage import check_no_leakage
from biastransfer.data.manifest import read_manifest, validate_manifest, verify_files, write_manifest
from biastransfer.data.splits import read_split, write_split
from biastransfer.data.user import UserDataError, analysis_set_manifest, read_table

__all__ = [
    "coco",
    "openimages",
    "synthetic",
    "read_manifest",
    "write_manifest",
    "validate_manifest",
    "verify_files",
    "analysis_set_manifest",
    "read_table",
    "read_split",
    "write_split",
    "check_no_leakage",
    "fetch",
    "Download",
    "ChecksumError",
    "DownloadError",
    "UserDataError",
]
