"""Config checks remembered once passed and values remembered once computed (biastransfer.check_cache), and the lazy curated namespaces
(biastransfer._lazy) that keep a dry run from importing torch."""

import subprocess
import sys
from types import ModuleType

import pytest
from conftest import ROOT

from biastransfer import check_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASTRANSFER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "config-checks"


def test_a_passed_check_runs_once_for_its_key_and_again_for_another(cache):
    calls = []

    def check():
        calls.append(1)
        return []

    assert check_cache.passed_check("layers", {"models": {"m": {}}}, check, code="models") == []
    assert check_cache.passed_check("layers", {"models": {"m": {}}}, check, code="models") == []
    assert len(calls) == 1 and len(list(cache.iterdir())) == 1
    check_cache.passed_check("layers", {"models": {"m": {"layers": ["layer1"]}}}, check, code="models")
    assert len(calls) == 2


def test_problems_are_never_remembered(cache):
    calls = []

    def check():
        calls.append(1)
        return ["models.m.layers: no layer 'nope'"]

    for _ in range(2):
        assert check_cache.passed_check("layers", {"m": 1}, check, code="models") == [
            "models.m.layers: no layer 'nope'"
        ]
    assert len(calls) == 2 and not cache.exists()


def test_the_key_follows_the_library_source_and_the_package_versions(cache, monkeypatch):
    key = check_cache.check_key("layers", {"m": 1}, "models")
    assert key == check_cache.check_key("layers", {"m": 1}, "models")
    assert key != check_cache.check_key("layers", {"m": 1}, "stats")  # another subpackage's code
    monkeypatch.setattr(check_cache, "installed_version", lambda name: "0.0" if name == "timm" else None)
    assert key != check_cache.check_key("layers", {"m": 1}, "models")


def test_an_unwritable_cache_is_skipped(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("BIASTRANSFER_CACHE_DIR", str(blocker))
    assert check_cache.passed_check("layers", {}, lambda: [], code="models") == []


def test_a_value_is_computed_once_for_its_key_and_read_back_as_json(cache):
    calls = []

    def compute():
        calls.append(1)
        return {"m": [256, "bilinear"]}

    for _ in range(2):
        assert check_cache.remembered("resizes", {"m": {}}, compute, code="models") == {"m": [256, "bilinear"]}
    assert len(calls) == 1 and len(list(cache.iterdir())) == 1
    assert check_cache.remembered("resizes", {"m": {"arch": "x"}}, compute, code="models") == {"m": [256, "bilinear"]}
    assert len(calls) == 2


def test_a_remembered_value_that_is_not_json_is_computed_again(cache):
    check_cache.remembered("resizes", {}, lambda: [1], code="models")
    (stored,) = cache.iterdir()
    stored.write_text("{cut off")
    assert check_cache.remembered("resizes", {}, lambda: [2], code="models") == [2]
    assert check_cache.remembered("resizes", {}, lambda: [3], code="models") == [2]


def test_a_value_is_computed_each_time_where_the_cache_cannot_be_written(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("BIASTRANSFER_CACHE_DIR", str(blocker))
    calls = []
    for _ in range(2):
        assert check_cache.remembered("resizes", {}, lambda: calls.append(1) or [1], code="models") == [1]
    assert len(calls) == 2


def test_reading_the_config_and_its_light_modules_imports_neither_torch_nor_scipy_stats():
    code = (
        "import sys; from biastransfer.workflow import config; import biastransfer.stats.floors, biastransfer.models.resolve;"
        "import biastransfer.report.artefacts, biastransfer.check_cache;"
        "print(sorted({'torch', 'scipy.stats', 'matplotlib', 'timm'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout.strip() == "[]"


def test_a_submodule_named_like_an_export_does_not_replace_it():
    import biastransfer.stats.ieat as module_or_function  # the package's `ieat` is the function, as before
    from biastransfer import stats

    assert callable(stats.ieat) and not isinstance(stats.ieat, ModuleType) and stats.ieat is module_or_function
    assert stats.ieat.__module__ == "biastransfer.stats.ieat" and "ieat" in dir(stats)
    from biastransfer.data import coco

    assert isinstance(coco, ModuleType)  # a submodule exported as itself
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        stats.nope  # noqa: B018
