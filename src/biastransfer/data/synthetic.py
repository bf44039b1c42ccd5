"""A synthetic planted-bias benchmark: procedurally drawn scenes whose co-occurrence bias is known.

Two person figures stand in for the two perceived-gender groups of the paper: both have a round head;
``person_a`` has a rectangular body and ``person_b`` a triangular one. Objects (car, surfboard,
refrigerator, stop sign) are drawn beside them or alone. The generator plants a configurable
co-occurrence: ``cooccurrence[obj]`` is the probability that the person drawn next to ``obj`` is
``person_a``. A model trained on scenes where surfboards go with ``person_a`` learns that association;
the same model trained on unbiased scenes does not, so the bias is learned, not drawn into the pixels.

Images are PNG files; training data is written as the workflow's split format and analysis sets as
manifests (``docs/formats.md``), exactly as the real datasets are.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, ImageDraw

from biastransfer.data.attributes import Attributes
from biastransfer.hashing import file_digest
from biastransfer.vocabulary import SYNTHETIC_CLASSES, SYNTHETIC_GROUPS, SYNTHETIC_OBJECTS

GROUPS, OBJECTS = SYNTHETIC_GROUPS, SYNTHETIC_OBJECTS
PERSON_LABEL = "person"


@dataclass(frozen=True)
class Scene:
    """What one image shows: zero or one person figure and zero or more objects.

    ``occluded`` objects are in the labels but not drawn (hidden from view), as when a surfboard is
    cropped out of a photo whose caption mentions it: the model can only guess them from context.
    """

    person: str | None
    objects: tuple[str, ...]
    occluded: tuple[str, ...] = ()

    def labels(self, label_groups: bool) -> list[str]:
        """Multi-label targets; with ``label_groups`` False both figures are labelled ``person``."""
        out = [*self.objects, *self.occluded]
        if self.person is not None:
            out.append(self.person if label_groups else PERSON_LABEL)
        return sorted(out)


@dataclass(frozen=True)
class SceneDistribution:
    """How training scenes are drawn.

    ``p_person``: share of images with a person figure; ``p_object``: share with an object;
    ``cooccurrence[obj]``: P(the person beside ``obj`` is person_a). Objects not listed get 0.5.
    ``p_occluded``: P(an object next to a person is occluded: labelled but not drawn). Occlusion is
    what makes the co-occurrence learnable: a fully visible object is recognised from its own pixels,
    an occluded one only from the person beside it.
    """

    p_person: float = 0.8
    p_object: float = 0.85
    cooccurrence: Mapping[str, float] | None = None
    p_occluded: float = 0.0

    def __post_init__(self) -> None:
        for name, p in (("p_person", self.p_person), ("p_object", self.p_object), ("p_occluded", self.p_occluded)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {p}")
        for obj, p in (self.cooccurrence or {}).items():
            if obj not in OBJECTS:
                raise ValueError(f"cooccurrence: unknown object {obj!r} (known: {', '.join(OBJECTS)})")
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"cooccurrence[{obj!r}] must be a probability in [0, 1], got {p}")

    def sample(self, n: int, rng: np.random.Generator) -> list[Scene]:
        """Draw ``n`` scenes."""
        bias = {obj: 0.5 for obj in OBJECTS} | dict(self.cooccurrence or {})
        scenes = []
        for _ in range(n):
            obj = OBJECTS[rng.integers(len(OBJECTS))] if rng.random() < self.p_object else None
            person = None
            if rng.random() < self.p_person:
                p_a = bias[obj] if obj is not None else 0.5
                person = GROUPS[0] if rng.random() < p_a else GROUPS[1]
            if obj is not None and person is not None and rng.random() < self.p_occluded:
                scenes.append(Scene(person, (), (obj,)))
            else:
                scenes.append(Scene(person, (obj,) if obj else ()))
        return scenes


def analysis_scene(class_name: str, rng: np.random.Generator) -> Scene:
    """The scene for one image of an analysis class.

    ``person_a`` / ``person_b``: a figure alone; ``car``: an object in isolation; ``car_person_a``: the
    object with that figure; ``random``: an object or figure or both, drawn uniformly.
    """
    if class_name in GROUPS:
        return Scene(class_name, ())
    if class_name in OBJECTS:
        return Scene(None, (class_name,))
    for obj in OBJECTS:
        for group in GROUPS:
            if class_name == f"{obj}_{group}":
                return Scene(group, (obj,))
    if class_name == "random":
        obj = OBJECTS[rng.integers(len(OBJECTS))] if rng.random() < 0.7 else None
        person = GROUPS[rng.integers(2)] if (obj is None or rng.random() < 0.5) else None
        return Scene(person, (obj,) if obj else ())
    raise ValueError(f"unknown synthetic analysis class {class_name!r} (known: {', '.join(SYNTHETIC_CLASSES)})")


def _colour(rng: np.random.Generator, lo: int = 0, hi: int = 256) -> tuple[int, int, int]:
    return tuple(int(v) for v in rng.integers(lo, hi, size=3))


def _draw_person(draw: ImageDraw.ImageDraw, group: str, cx: float, base: float, h: float, rng) -> None:
    skin = (int(rng.integers(120, 236)), int(rng.integers(80, 200)), int(rng.integers(60, 170)))
    cloth = _colour(rng, 20, 200)
    head_r = 0.13 * h
    top = base - h
    draw.ellipse([cx - head_r, top, cx + head_r, top + 2 * head_r], fill=skin)
    body_top, half_w = top + 2.2 * head_r, 0.22 * h
    if group == GROUPS[0]:
        draw.rectangle([cx - half_w, body_top, cx + half_w, base], fill=cloth)
    else:
        draw.polygon([(cx, body_top), (cx - 1.3 * half_w, base), (cx + 1.3 * half_w, base)], fill=cloth)


def _draw_object(draw: ImageDraw.ImageDraw, obj: str, cx: float, base: float, h: float, rng) -> None:
    if obj == "surfboard":
        w = 0.28 * h
        draw.ellipse([cx - w / 2, base - h, cx + w / 2, base], fill=_colour(rng, 40, 256))
        draw.line([cx, base - 0.9 * h, cx, base - 0.1 * h], fill=_colour(rng, 0, 120), width=1)
    elif obj == "car":
        w, body_h = 0.9 * h, 0.32 * h
        wheel = 0.1 * h
        y0 = base - wheel - body_h
        draw.rectangle([cx - w / 2, y0, cx + w / 2, base - wheel], fill=_colour(rng, 0, 256))
        draw.rectangle([cx - w / 4, y0 - 0.6 * body_h, cx + w / 4, y0], fill=_colour(rng, 0, 256))
        for wx in (cx - w / 3, cx + w / 3):
            draw.ellipse([wx - wheel, base - 2 * wheel, wx + wheel, base], fill=(10, 10, 10))
    elif obj == "refrigerator":
        w = 0.45 * h
        draw.rectangle([cx - w / 2, base - h, cx + w / 2, base], fill=_colour(rng, 170, 256), outline=(90, 90, 90))
        draw.line([cx - w / 2, base - 0.62 * h, cx + w / 2, base - 0.62 * h], fill=(60, 60, 60), width=1)
    elif obj == "stop_sign":
        r = 0.25 * h
        cy = base - h + r
        pts = [
            (cx + r * math.cos(math.pi / 8 + k * math.pi / 4), cy + r * math.sin(math.pi / 8 + k * math.pi / 4))
            for k in range(8)
        ]
        draw.line([cx, cy + r, cx, base], fill=(110, 110, 110), width=max(1, int(0.04 * h)))
        draw.polygon(pts, fill=(int(rng.integers(180, 240)), 20, 25), outline=(250, 250, 250))
    else:
        raise ValueError(f"unknown object {obj!r}")


def draw_scene(scene: Scene, rng: np.random.Generator, size: int = 64) -> Image.Image:
    """Render a scene as an RGB image of ``size`` x ``size`` pixels on a light, noisy background."""
    bg = np.asarray(_colour(rng, 150, 256), dtype=np.int16)
    pixels = bg + rng.integers(-18, 19, size=(size, size, 3))
    img = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(img)
    items: list[tuple[str, str]] = [("object", o) for o in scene.objects]
    if scene.person is not None:
        items.append(("person", scene.person))
    slots = rng.permutation(len(items))
    for (kind, name), slot in zip(items, slots):
        width = size / max(len(items), 1)
        cx = width * (slot + 0.5) + rng.uniform(-0.1, 0.1) * width
        base = size * rng.uniform(0.85, 0.97)
        h = size * rng.uniform(0.55, 0.8)
        if kind == "person":
            _draw_person(draw, name, cx, base, h, rng)
        else:
            _draw_object(draw, name, cx, base, h, rng)
    return img


def write_images(
    scenes: Sequence[Scene], ids: Sequence[str], directory: str | os.PathLike, rng, size: int
) -> list[Path]:
    """Render and save each scene as ``directory/{id}.png``; returns the paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for scene, image_id in zip(scenes, ids):
        path = out / f"{image_id}.png"
        draw_scene(scene, rng, size).save(path, format="PNG", optimize=False)
        paths.append(path)
    return paths


def generate_split(
    dataset: str,
    split: str,
    n: int,
    distribution: SceneDistribution,
    *,
    label_groups: bool,
    size: int,
    rng: np.random.Generator,
    image_dir: str | os.PathLike,
) -> pd.DataFrame:
    """Draw ``n`` scenes, save them, and return the split rows (image_id, path, labels) with the drawn
    ``figure`` of each (person_a, person_b or None: the protected attribute, whatever the labels say)."""
    scenes = distribution.sample(n, rng)
    ids = [f"{dataset}-{split}-{i:06d}" for i in range(n)]
    paths = write_images(scenes, ids, image_dir, rng, size)
    return pd.DataFrame(
        {
            "image_id": ids,
            "path": [str(p) for p in paths],
            "labels": [s.labels(label_groups) for s in scenes],
            "figure": [s.person for s in scenes],
        }
    )


#: Where a synthetic scene's protected attribute comes from (an attribute file's ``source`` column).
FIGURE_SOURCE = "synthetic scene: drawn figure"


def spec_distribution(spec: Mapping) -> SceneDistribution:
    """The scene distribution of a synthetic dataset's config entry (``p_person``, ``p_object``,
    ``cooccurrence``, ``p_occluded``)."""
    keys = ("p_person", "p_object", "cooccurrence", "p_occluded")
    return SceneDistribution(**{k: spec[k] for k in keys})


def figure_attributes(
    dataset: str, split: str, split_sha256: str, classes: Sequence[str], image_ids, figures
) -> Attributes:
    """The attribute file of a synthetic split: each image's drawn figure (None: a scene without one)."""
    figures = list(figures)
    return Attributes(
        dataset,
        split,
        split_sha256,
        GROUPS,
        tuple(c for c in classes if c in (*GROUPS, PERSON_LABEL)),
        pd.DataFrame(
            {
                "image_id": list(image_ids),
                "attribute": figures,
                "source": [None if pd.isna(f) else FIGURE_SOURCE for f in figures],
            }
        ),
    )


def drawn_split_attributes(path: str, split, drawn: Sequence, spec: Mapping, dataset: str, name: str) -> Attributes:
    """The attribute file of the synthetic split ``split`` (read from ``path``, named ``name``) from the
    scenes ``drawn`` for it; a ValueError naming the first image whose labels differ (a split made with
    another spec)."""
    if len(drawn) != len(split.frame):
        raise ValueError(f"{path}: {len(split.frame)} images, but the spec of {dataset!r} draws {len(drawn)}")
    for image_id, labels, scene in zip(split.frame["image_id"], split.frame["labels"], drawn):
        if sorted(labels) != scene.labels(spec["label_groups"]):
            raise ValueError(
                f"{path}: image {image_id!r} has labels {sorted(labels)}, but the spec of "
                f"{dataset!r} draws {scene.labels(spec['label_groups'])}; was it made with another spec?"
            )
    figures = (s.person for s in drawn)
    return figure_attributes(dataset, name, file_digest(path), split.classes, split.frame["image_id"], figures)


#: The test split's own seed stream: spawned from the dataset's seed, so it draws none of the train and
#: val scenes and adding it changes none of them.
TEST_STREAM = 1


def evaluation_rng(seed: int) -> np.random.Generator:
    """The generator of a dataset's test split (:data:`TEST_STREAM` of its ``seed``)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(TEST_STREAM,)))


def class_list(label_groups: bool) -> tuple[str, ...]:
    """The classifier's classes for a synthetic dataset."""
    return tuple(sorted([*OBJECTS, *(GROUPS if label_groups else (PERSON_LABEL,))]))


def generate_analysis_set(
    name: str,
    classes: Sequence[str],
    n_per_class: int,
    *,
    size: int,
    seed: int,
    image_dir: str | os.PathLike,
) -> pd.DataFrame:
    """Draw ``n_per_class`` fresh images per analysis class; return the manifest rows."""
    if n_per_class < 2:
        raise ValueError(f"analysis set {name!r}: need at least 2 images per class, got n_per_class={n_per_class}")
    rng = np.random.default_rng(seed)
    rows = []
    for cls in classes:
        scenes = [analysis_scene(cls, rng) for _ in range(n_per_class)]
        ids = [f"{name}-{cls}-{i:04d}" for i in range(n_per_class)]
        for image_id, scene, path in zip(ids, scenes, write_images(scenes, ids, image_dir, rng, size)):
            rows.append(
                {
                    "image_id": image_id,
                    "class": cls,
                    "path": str(path),
                    "sha256": file_digest(path),
                    "source_split": "analysis",
                    "source": "synthetic (CC0)",
                    "reason": f"drawn as class {cls}: person={scene.person or 'none'}, objects={'+'.join(scene.objects) or 'none'}",
                }
            )
    return pd.DataFrame(rows)
