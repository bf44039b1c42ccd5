"""The synthetic planted-bias generator: scenes, planted co-occurrence, splits and analysis sets."""

import numpy as np
import pytest
from PIL import Image

from biastransfer.data import synthetic
from biastransfer.data.manifest import validate_manifest
from biastransfer.hashing import file_digest


def test_planted_cooccurrence_is_drawn_at_the_configured_rate():
    rng = np.random.default_rng(0)
    dist = synthetic.SceneDistribution(p_person=1.0, p_object=1.0, cooccurrence={"surfboard": 0.9, "car": 0.1})
    scenes = dist.sample(8000, rng)
    for obj, expected in (("surfboard", 0.9), ("car", 0.1), ("refrigerator", 0.5)):
        with_obj = [s for s in scenes if obj in s.objects]
        share_a = np.mean([s.person == "person_a" for s in with_obj])
        assert abs(share_a - expected) < 0.03, (obj, share_a)


def test_occluded_objects_are_labelled_but_not_drawn():
    dist = synthetic.SceneDistribution(p_person=1.0, p_object=1.0, p_occluded=0.5)
    scenes = dist.sample(2000, np.random.default_rng(1))
    occluded = [s for s in scenes if s.occluded]
    assert abs(len(occluded) / len(scenes) - 0.5) < 0.04
    scene = occluded[0]
    assert scene.objects == () and scene.occluded[0] in scene.labels(label_groups=True)
    drawn = synthetic.draw_scene(scene, np.random.default_rng(2), 48)
    alone = synthetic.draw_scene(synthetic.Scene(scene.person, ()), np.random.default_rng(2), 48)
    assert np.array_equal(np.asarray(drawn), np.asarray(alone))
    with pytest.raises(ValueError, match="p_occluded"):
        synthetic.SceneDistribution(p_occluded=-0.1)


def test_labels_name_the_groups_only_when_asked():
    scene = synthetic.Scene("person_b", ("car",))
    assert scene.labels(label_groups=True) == ["car", "person_b"]
    assert scene.labels(label_groups=False) == ["car", "person"]
    assert synthetic.class_list(False) == ("car", "person", "refrigerator", "stop_sign", "surfboard")


@pytest.mark.parametrize(
    "name, person, objects",
    [("person_a", "person_a", ()), ("car", None, ("car",)), ("surfboard_person_b", "person_b", ("surfboard",))],
)
def test_analysis_classes_show_what_they_say(name, person, objects):
    scene = synthetic.analysis_scene(name, np.random.default_rng(0))
    assert (scene.person, scene.objects) == (person, objects)


def test_unknown_class_and_bad_probability_are_named():
    with pytest.raises(ValueError, match="'bicycle'"):
        synthetic.analysis_scene("bicycle", np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"cooccurrence\['car'\]"):
        synthetic.SceneDistribution(cooccurrence={"car": 1.5})
    with pytest.raises(ValueError, match="unknown object 'boat'"):
        synthetic.SceneDistribution(cooccurrence={"boat": 0.5})


def test_images_are_deterministic_given_the_seed(tmp_path):
    scene = synthetic.Scene("person_a", ("stop_sign",))
    a = synthetic.draw_scene(scene, np.random.default_rng(3), 48)
    b = synthetic.draw_scene(scene, np.random.default_rng(3), 48)
    c = synthetic.draw_scene(scene, np.random.default_rng(4), 48)
    assert a.size == (48, 48) and a.mode == "RGB"
    assert np.array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(a), np.asarray(c))


def test_analysis_set_manifest_is_valid_and_hashes_match(tmp_path):
    frame = synthetic.generate_analysis_set(
        "demo", ["person_a", "person_b", "car", "random"], 3, size=32, seed=1, image_dir=tmp_path
    )
    validate_manifest(frame)
    assert frame.groupby("class").size().to_dict() == {"car": 3, "person_a": 3, "person_b": 3, "random": 3}
    row = frame.iloc[0]
    assert file_digest(row["path"]) == row["sha256"]
    assert Image.open(row["path"]).size == (32, 32)
    assert "person=person_a" in row["reason"]
    with pytest.raises(ValueError, match="at least 2 images per class"):
        synthetic.generate_analysis_set("demo", ["car"], 1, size=32, seed=1, image_dir=tmp_path)


def test_split_rows_and_labels(tmp_path):
    frame = synthetic.generate_split(
        "d",
        "train",
        20,
        synthetic.SceneDistribution(),
        label_groups=True,
        size=32,
        rng=np.random.default_rng(0),
        image_dir=tmp_path,
    )
    assert len(frame) == 20 and frame["image_id"].is_unique
    assert set(frame["labels"].explode().dropna()) <= set(synthetic.class_list(True))
