"""biastransfer: measure how gender biases in vision-model embeddings change with finetuning.

The statistics work on plain arrays of row-wise embeddings; the I/O modules read and write the
workflow's Parquet files (see ``embeddings`` and ``manifest``).
"""

__version__ = "0.2.0"
