"""Images and multi-label targets of a split, and the seeded epoch order and loaders of the training loop."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler, get_worker_info

from biastransfer.data.cache import ImageCache
from biastransfer.data.splits import Split
from biastransfer.images import load_rgb
from biastransfer.train.config import TrainConfig


class ImageLabelDataset(Dataset):
    """Images of a split with their multi-hot targets; decoding happens in DataLoader workers.

    An item key is an index, or ``(index, seed)`` from :class:`EpochSampler`: the transform's random
    draws (e.g. flips) are then seeded by ``seed``, so they do not depend on which worker runs it.
    ``cache``: the split's decoded-once cache (:class:`~biastransfer.data.cache.ImageCache`), read
    instead of the image files. ``normalize``: with a transform that ends in uint8 tensors, what turns
    a batch of them into the model's inputs on the training device (:func:`make_loader` applies it).
    ``codes``: each image's attribute code (biastransfer.train.methods.Groups); an item is then
    ``(image, target, code)``.
    """

    def __init__(
        self,
        split: Split,
        transform: Callable,
        classes: Sequence[str] | None = None,
        *,
        cache: ImageCache | None = None,
        normalize: Callable[[torch.Tensor], torch.Tensor] | None = None,
        codes: np.ndarray | None = None,
    ):
        self.classes = tuple(classes or split.classes)
        index = {c: i for i, c in enumerate(self.classes)}
        # Compact storage that loader workers share without copying: paths as one bytes array and the
        # labels as CSR indices (a dense multi-hot matrix of 1.7M Open Images x 601 classes is 4 GB).
        self.paths = np.array([str(p).encode() for p in split.frame["path"]], dtype=np.bytes_)
        counts, flat = [], []
        for labels in split.frame["labels"]:
            for label in labels:
                if label not in index:
                    raise ValueError(f"split {split.dataset}/{split.name}: label {label!r} is not a model class")
                flat.append(index[label])
            counts.append(len(labels))
        self.label_index = np.asarray(flat, dtype=np.int32)
        self.label_start = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        self.transform, self.cache, self.normalize = transform, cache, normalize
        self.codes = None if codes is None else torch.as_tensor(np.asarray(codes, dtype=np.int64))
        if self.codes is not None and len(self.codes) != len(self.paths):
            raise ValueError(
                f"split {split.dataset}/{split.name}: {len(self.paths)} images but {len(self.codes)} attribute codes"
            )
        if cache is not None and len(cache) != len(self.paths):
            raise ValueError(
                f"split {split.dataset}/{split.name}: {len(self.paths)} images but its cache has {len(cache)}"
            )

    def target(self, i: int) -> torch.Tensor:
        """The multi-hot target vector of item ``i``."""
        y = torch.zeros(len(self.classes))
        y[torch.from_numpy(self.label_index[self.label_start[i] : self.label_start[i + 1]]).long()] = 1.0
        return y

    def __len__(self) -> int:
        return len(self.paths)

    def _load(self, i: int) -> torch.Tensor:
        if self.cache is not None:
            return self.transform(self.cache.image(i))
        return self.transform(load_rgb(self.paths[i].decode()))

    def __getitem__(self, key):
        if isinstance(key, tuple):
            i, seed = key
            # The CPU generator only: torch.manual_seed also queues lazy CUDA / XPU / MTIA seeding, each
            # call formatting a stack trace (about a millisecond per image), and transforms draw on the CPU.
            if get_worker_info() is None:  # main process: leave the training RNG stream alone
                with torch.random.fork_rng(devices=[]):
                    torch.default_generator.manual_seed(seed)
                    x = self._load(i)
            else:
                torch.default_generator.manual_seed(seed)
                x = self._load(i)
        else:
            i, x = key, self._load(key)
        return (x, self.target(i)) if self.codes is None else (x, self.target(i), self.codes[i])


def epoch_seed(seed: int, epoch: int) -> int:
    return (seed * 100_003 + epoch) % 2**62


class EpochSampler(Sampler):
    """A shuffled order per epoch that depends only on (seed, epoch); yields ``(index, item_seed)``.

    The workflow keeps one loader (and its persistent workers) for the whole run and calls
    :meth:`set_epoch` before each epoch, as with ``DistributedSampler``. With ``weights`` (an
    intervention's sample weights, one per image), each epoch draws ``n`` images with replacement,
    image ``i`` with probability ``weights[i] / sum(weights)``; each draw has its own item seed.
    """

    def __init__(self, n: int, seed: int, weights: np.ndarray | None = None):
        self.n, self.seed, self.epoch = n, seed, 1
        self.weights = None
        if weights is not None:
            weights = torch.as_tensor(np.asarray(weights, dtype=np.float64))
            if weights.shape != (n,) or not torch.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
                raise ValueError(f"sample weights: {n} finite non-negative weights, not all 0, are needed")
            self.weights = weights

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[tuple[int, int]]:
        base = epoch_seed(self.seed, self.epoch)
        generator = torch.Generator().manual_seed(base)
        if self.weights is not None:
            drawn = torch.multinomial(self.weights, self.n, replacement=True, generator=generator).tolist()
            return iter([(i, (base * 1_000_003 + j) % 2**62) for j, i in enumerate(drawn)])
        order = torch.randperm(self.n, generator=generator).tolist()
        return iter([(i, (base * 1_000_003 + i) % 2**62) for i in order])


class DeviceBatches:
    """Batches of a DataLoader moved to ``device`` and finished there by ``normalize`` (uint8 -> inputs)."""

    def __init__(self, loader: DataLoader, normalize: Callable[[torch.Tensor], torch.Tensor], device: torch.device):
        self.loader, self.normalize, self.device = loader, normalize, device
        self.dataset = loader.dataset

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        for x, *rest in self.loader:
            yield self.normalize(x.to(self.device, non_blocking=True)), *rest


def make_loader(
    dataset: Dataset,
    cfg: TrainConfig,
    device: torch.device,
    *,
    sampler: Sampler | None = None,
    drop_last: bool = False,
    persistent: bool = True,
) -> DataLoader | DeviceBatches:
    """A DataLoader that decodes in ``cfg.num_workers`` workers (kept between epochs if ``persistent``);
    pinned memory on CUDA. A dataset with a ``normalize`` (uint8 items) gets its batches normalised on
    ``device``."""
    workers = cfg.num_workers
    loader = DataLoader(
        dataset,
        batch_size=cfg.batch_size,
        sampler=sampler,
        drop_last=drop_last,
        num_workers=workers,
        pin_memory=device.type == "cuda",
        persistent_workers=persistent and workers > 0,
        prefetch_factor=cfg.prefetch_factor if workers > 0 else None,
    )
    normalize = getattr(dataset, "normalize", None)
    return loader if normalize is None else DeviceBatches(loader, normalize, device)
