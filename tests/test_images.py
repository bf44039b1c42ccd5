"""Image decoding: every loader sees a 16-bit PNG at its true grey level and an EXIF-rotated JPEG upright.

Hand-made files with known pixels: a 16-bit grey PNG of value 0x8040 (8-bit: 0x80), and a JPEG stored
40 px wide, red on the left and blue on the right, tagged orientation 6 ("rotate 90 degrees clockwise to
display"), so that upright it is 20 px wide, 40 px tall, red on top. A float TIFF is refused by name.
"""

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from biastransfer.data.splits import Split
from biastransfer.data.user import UserDataError, analysis_set_manifest
from biastransfer.images import load_rgb
from biastransfer.models.features import ImageFiles
from biastransfer.report.gallery import _thumbnail
from biastransfer.train.data import ImageLabelDataset


def _training_item(path):
    split = Split("own", "train", ("a",), pd.DataFrame({"image_id": ["1"], "path": [str(path)], "labels": [["a"]]}))
    return ImageLabelDataset(split, np.asarray)[0][0]


LOADERS = {
    "load_rgb": lambda path: np.asarray(load_rgb(path)),
    "embedding": lambda path: ImageFiles([path], np.asarray)[0],
    "training": _training_item,
    "contact sheet": _thumbnail,
}


@pytest.fixture
def grey16(tmp_path):
    path = tmp_path / "grey16.png"
    Image.fromarray(np.full((6, 8), 0x8040, dtype=np.uint16)).save(path)
    assert Image.open(path).mode == "I;16"
    return path


@pytest.fixture
def rotated(tmp_path):
    pixels = np.zeros((20, 40, 3), dtype=np.uint8)
    pixels[:, :20, 0] = 255
    pixels[:, 20:, 2] = 255
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 degrees clockwise to display
    path = tmp_path / "rotated.jpg"
    Image.fromarray(pixels).save(path, exif=exif, quality=95)
    return path


@pytest.mark.parametrize("loader", LOADERS.values(), ids=LOADERS.keys())
def test_a_16_bit_png_keeps_its_grey_level(loader, grey16):
    pixels = loader(grey16)
    assert pixels.shape == (6, 8, 3) and pixels.dtype == np.uint8
    assert (pixels == 0x80).all()


@pytest.mark.parametrize("loader", LOADERS.values(), ids=LOADERS.keys())
def test_an_exif_rotated_jpeg_is_decoded_upright(loader, rotated):
    pixels = loader(rotated).astype(int)
    assert pixels.shape == (40, 20, 3)
    top, bottom = pixels[10, 10], pixels[30, 10]
    assert top[0] > 200 and top[2] < 50, top
    assert bottom[2] > 200 and bottom[0] < 50, bottom


def test_a_float_image_is_refused_by_name_at_decoding_and_in_the_manifest(tmp_path):
    path = tmp_path / "imgs" / "a" / "float.tiff"
    path.parent.mkdir(parents=True)
    Image.fromarray(np.full((8, 8), 0.5, dtype=np.float32)).save(path)
    with pytest.raises(ValueError, match=r"float\.tiff: pixel mode F"):
        load_rgb(path)
    Image.fromarray(np.full((8, 8, 3), 7, dtype=np.uint8)).save(tmp_path / "imgs" / "a" / "ok.png")
    entry = {"source": "folder", "root": str(tmp_path / "imgs"), "classes": ["a"], "min_per_class": 1}
    with pytest.raises(UserDataError, match=r"float\.tiff: pixel mode F"):
        analysis_set_manifest(entry, tmp_path / "m.parquet")


def test_missing_and_corrupt_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="gone.png"):
        load_rgb(tmp_path / "gone.png")
    (tmp_path / "junk.png").write_bytes(b"\x89PNG not really")
    with pytest.raises(ValueError, match="junk.png"):
        load_rgb(tmp_path / "junk.png")
