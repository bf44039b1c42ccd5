"""The library's public surface: every re-exported name imports, the env boundaries hold, the README's code runs."""

import ast
import importlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from biastransfer.embeddings import write_embeddings

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "src" / "biastransfer"
SUBPACKAGES = sorted(p.parent.name for p in LIBRARY.glob("*/__init__.py"))


def public_names(module_file: Path) -> list[str]:
    """Names a module defines at top level (functions, classes, assignments) that do not start with '_'."""
    names = []
    for node in ast.parse(module_file.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in dict.fromkeys(names) if not n.startswith("_") and n != "log"]


def test_the_library_has_the_documented_subpackages():
    assert SUBPACKAGES == ["data", "models", "report", "stats", "train", "workflow"]


def api_page_names() -> dict[str, list[str]]:
    """The names docs/api.md lists under each subpackage's heading."""
    sections = re.split(r"^## `biastransfer\.(\w+)`$", (ROOT / "docs" / "api.md").read_text(), flags=re.M)
    return {pkg: re.findall(r"^\| `(\w+)` \|", body, flags=re.M) for pkg, body in zip(sections[1::2], sections[2::2])}


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_each_subpackage_exports_its_documented_list_and_nothing_else(package):
    pkg = importlib.import_module(f"biastransfer.{package}")
    assert len(pkg.__all__) == len(set(pkg.__all__)), f"biastransfer.{package}.__all__ repeats a name"
    for name in pkg.__all__:
        assert getattr(pkg, name).__doc__, f"biastransfer.{package}.{name} has no docstring"
    public = sorted(n for n in vars(pkg) if not n.startswith("_") and not isinstance(getattr(pkg, n), ModuleType))
    modules = {n for n in vars(pkg) if isinstance(getattr(pkg, n), ModuleType)}
    assert set(public) <= set(pkg.__all__), (
        f"biastransfer.{package} has names beyond __all__: {set(public) - set(pkg.__all__)}"
    )
    assert modules - set(pkg.__all__) <= {p.stem for p in (LIBRARY / package).glob("*.py")} | {
        p.parent.name for p in (LIBRARY / package).glob("*/__init__.py")
    }
    assert api_page_names()[package] == pkg.__all__, (
        f"docs/api.md does not list biastransfer.{package}.__all__ in order"
    )


def test_no_two_subpackages_export_one_name_for_two_things():
    owners: dict[str, object] = {}
    for package in SUBPACKAGES:
        pkg = importlib.import_module(f"biastransfer.{package}")
        for name in pkg.__all__:
            obj = getattr(pkg, name)
            assert owners.setdefault(name, obj) is obj, f"{name!r} is exported by two subpackages for two things"


@pytest.mark.parametrize("package", ["stats", "report", "data"])
def test_statistics_reporting_and_data_never_import_torch(package):
    code = f"import sys, biastransfer.{package}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False", f"importing biastransfer.{package} imports torch"


def readme_python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_the_readme_code_examples_run_as_written(tmp_path):
    blocks = readme_python_blocks()
    assert blocks, "README.md has no python example"
    for i, block in enumerate(blocks):
        done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"README python block {i} failed:\n{block}\n{done.stderr[-3000:]}"
        assert done.stdout.strip(), f"README python block {i} printed nothing"


def test_pip_install_gives_the_statistics_and_the_command_without_snakemake(tmp_path):
    """The wheel (`pip install .`) needs Snakemake only for its `workflow` extra: installed alone, with every
    import of snakemake failing, `biastransfer.stats` and the `biastransfer` command work."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    source = tmp_path / "source"  # a copy: setuptools builds in the source tree (build/, *.egg-info)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path / "wheels", source], check=True)
    (wheel,) = (tmp_path / "wheels").glob("biastransfer-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [line for line in archive.read(metadata).decode().splitlines() if line.startswith("Requires-Dist")]
        assert "biastransfer/report/results.schema.json" in archive.namelist()  # the results model's schema
    assert all("extra ==" in line for line in requires if "snakemake" in line), requires
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", site, wheel], check=True)
    (tmp_path / "block" / "snakemake").mkdir(parents=True)
    (tmp_path / "block" / "snakemake" / "__init__.py").write_text("raise ImportError('snakemake is not installed')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'block'}{os.pathsep}{site}"}
    code = "import biastransfer, biastransfer.stats as s; print(biastransfer.__file__); print(s.ieat.__name__)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(site / "biastransfer" / "__init__.py"), "ieat"]
    rng = np.random.default_rng(0)
    classes = [c for c in ("man", "woman", "car", "boat") for _ in range(6)]
    write_embeddings(tmp_path / "e.parquet", [f"i{k}" for k in range(24)], classes, rng.standard_normal((24, 4)))
    command = [sys.executable, site / "bin" / "biastransfer", "ieat", tmp_path / "e.parquet"]
    roles = ["--X", "man", "--Y", "woman", "--A", "car", "--B", "boat"]
    done = subprocess.run([*command, *roles], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "two-sided p" in done.stderr, done.stderr
