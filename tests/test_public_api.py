"""The library's public surface: every re-exported name imports, the env boundaries hold, the README's code runs."""

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "workflow" / "scripts" / "biastransfer"
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
    assert SUBPACKAGES == ["data", "models", "report", "stats", "train"]


#: Modules a subpackage re-exports as modules (their names repeat across kinds: coco.curate, openimages.curate).
AS_MODULES = {"data": {"coco", "openimages", "synthetic"}}


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_every_public_name_imports_from_its_subpackage(package):
    pkg = importlib.import_module(f"biastransfer.{package}")
    for name in pkg.__all__:
        assert hasattr(pkg, name), f"biastransfer.{package}.__all__ names {name!r}, which it does not define"
    defined: dict[str, list[str]] = {}
    for module_file in sorted((LIBRARY / package).glob("*.py")):
        if module_file.stem.startswith("_"):
            continue
        module = importlib.import_module(f"biastransfer.{package}.{module_file.stem}")
        if module_file.stem in AS_MODULES.get(package, ()):
            assert getattr(pkg, module_file.stem) is module
            continue
        for name in public_names(module_file):
            assert hasattr(module, name)
            defined.setdefault(name, []).append(module_file.stem)
    # a name two modules define (e.g. METHODS) stays in its modules; every other one is re-exported
    missing = sorted(n for n, where in defined.items() if len(where) == 1 and n not in pkg.__all__)
    assert not missing, f"biastransfer.{package} does not re-export {missing}"


@pytest.mark.parametrize("package", ["stats", "report", "data"])
def test_statistics_reporting_and_data_never_import_torch(package):
    code = f"import sys, biastransfer.{package}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False", f"importing biastransfer.{package} imports torch"


def test_no_library_module_is_over_500_lines():
    long = {
        str(p.relative_to(LIBRARY)): n for p in LIBRARY.rglob("*.py") if (n := len(p.read_text().splitlines())) > 500
    }
    assert not long, f"modules over 500 lines: {long}"


def readme_python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_the_readme_code_examples_run_as_written(tmp_path):
    blocks = readme_python_blocks()
    assert blocks, "README.md has no python example"
    for i, block in enumerate(blocks):
        done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"README python block {i} failed:\n{block}\n{done.stderr[-3000:]}"
        assert done.stdout.strip(), f"README python block {i} printed nothing"
