"""Datasets (never torch).

The curated public API (docs/api.md); everything else stays in its module. Names load on
first use (biastransfer._lazy).

- The dataset kinds as modules (their functions share names): :mod:`coco`, :mod:`openimages`, :mod:`synthetic`
- Analysis-set manifests: :func:`read_manifest`, :func:`write_manifest`, :func:`validate_manifest`,
  :func:`verify_files`; your own images: :func:`analysis_set_manifest`, :func:`read_table`
- Finetuning splits: :func:`read_split`, :func:`write_split`, and the leakage check :func:`check_no_leakage`
- Downloads that resume and verify: :func:`fetch`, :class:`Download`
- Errors: :class:`ChecksumError`, :class:`DownloadError`, :class:`UserDataError`
"""

from biastransfer._lazy import lazy_namespace as _lazy_namespace

#: Each public name and the module of this package that defines it, in the order docs/api.md lists them.
_EXPORTS = {
    "coco": None,
    "openimages": None,
    "synthetic": None,
    "read_manifest": "manifest",
    "write_manifest": "manifest",
    "validate_manifest": "manifest",
    "verify_files": "manifest",
    "analysis_set_manifest": "user",
    "read_table": "user",
    "read_split": "splits",
    "write_split": "splits",
    "check_no_leakage": "leakage",
    "fetch": "download",
    "Download": "download",
    "ChecksumError": "download",
    "DownloadError": "download",
    "UserDataError": "user",
}
__all__ = list(_EXPORTS)
_lazy_namespace(__name__, _EXPORTS)
