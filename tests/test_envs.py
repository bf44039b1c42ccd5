"""Each rule's conda env lists every third-party package its script imports (directly or via biastransfer).

Snakemake puts the script folder on sys.path, so `biastransfer` itself needs no install in the envs.
"""

import ast
import functools
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"
LIBRARY = ROOT / "src"
CONDA_NAMES = {
    "torch": {"pytorch"},
    "PIL": {"pillow"},
    "yaml": {"pyyaml"},
    "open_clip": {"open-clip-torch"},
    "matplotlib": {"matplotlib", "matplotlib-base"},
    "sklearn": {"scikit-learn"},
    "concept_erasure": {"concept-erasure"},
}
PROVIDED = {"snakemake"}  # the running Snakemake injects itself into every script


def rule_envs():
    """(rule, env file, script file) for every rule with a script."""
    out = []
    for smk in sorted((ROOT / "rules").glob("*.smk")):
        for block in re.split(r"^(?=rule \w+:)", smk.read_text(), flags=re.M):
            name = re.match(r"rule (\w+):", block)
            env = re.search(r'"\.\./envs/([\w-]+\.yaml)"', block)
            script = re.search(r'"\.\./workflow/scripts/([\w-]+\.py)"', block)
            if name and script:
                out.append((name[1], env[1] if env else None, script[1]))
    return out


def library_files(module: str) -> list[Path]:
    """The files Python runs to import ``module`` (``biastransfer.x.y``): every package ``__init__`` on the
    way, then the module itself; an unknown ``biastransfer`` name is an error, so a renamed module
    cannot silently drop out of this check."""
    parts = module.split(".")
    files = []
    for i in range(1, len(parts) + 1):
        base = LIBRARY.joinpath(*parts[:i])
        if (base / "__init__.py").is_file():
            files.append(base / "__init__.py")
        elif base.with_suffix(".py").is_file():
            files.append(base.with_suffix(".py"))
        else:
            raise AssertionError(f"{module}: no module or package {base.relative_to(LIBRARY)}")
    return files


@functools.cache
def parsed(path: Path) -> list[ast.stmt]:
    """The statements of a Python file, parsed once per session (every rule's walk reads the same files)."""
    return ast.parse(path.read_text()).body


@functools.cache
def lazy_exports(package: str) -> dict[str, str]:
    """``{name: module}`` of a package that loads its public names on first use (its ``_EXPORTS`` dict, as in
    biastransfer.stats); empty for any other package."""
    init = LIBRARY.joinpath(*package.split("."), "__init__.py")
    if not init.is_file():
        return {}
    for node in parsed(init):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_EXPORTS" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def imported_modules(node: ast.AST, path: Path) -> list[str]:
    """Dotted names an import statement in ``path`` loads (``from p import m`` may load submodule p.m, and a
    name of a lazy package its defining module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:  # relative import inside biastransfer
        package = path.relative_to(LIBRARY).parent.parts[: len(path.relative_to(LIBRARY).parent.parts) - node.level + 1]
        base = ".".join(package + ((node.module,) if node.module else ()))
    else:
        base = node.module
    names = [base]
    if base.split(".")[0] == "biastransfer":
        names += [
            f"{base}.{a.name}"
            for a in node.names
            if LIBRARY.joinpath(*base.split("."), a.name).with_suffix(".py").is_file()
            or (LIBRARY.joinpath(*base.split("."), a.name) / "__init__.py").is_file()
        ]
        lazy = lazy_exports(base)
        names += [f"{base}.{lazy[a.name] or a.name}" for a in node.names if a.name in lazy]
    return names


def _main_guard(node: ast.stmt) -> bool:
    """Whether ``node`` is an ``if __name__ == "__main__":`` block."""
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and getattr(test.left, "id", None) == "__name__"
        and [getattr(c, "value", None) for c in test.comparators] == ["__main__"]
    )


def third_party_imports(path: Path, seen: set[Path]) -> set[str]:
    """Top-level third-party modules imported by ``path`` and the biastransfer modules it imports (a library
    module's ``if __name__ == "__main__":`` block, its command, runs on no import)."""
    if path in seen:
        return set()
    seen.add(path)
    found = set()
    body = parsed(path)
    if path.is_relative_to(LIBRARY):
        body = [statement for statement in body if not _main_guard(statement)]
    for node in (n for statement in body for n in ast.walk(statement)):
        for name in imported_modules(node, path):
            top = name.split(".")[0]
            if top == "biastransfer":
                for module in library_files(name):
                    found |= third_party_imports(module, seen)
            elif top not in sys.stdlib_module_names and top not in PROVIDED:
                found.add(top)
    return found


def test_the_import_walk_follows_subpackages():
    """A stats script reaches scipy through ``biastransfer.stats``' __init__; a torch script reaches torch."""
    assert "scipy" in third_party_imports(SCRIPTS / "bts.py", set())
    lazy = ast.parse("from biastransfer.stats import bias_transfer_score").body[0]  # a name of a lazy package
    assert "biastransfer.stats.bts" in imported_modules(lazy, SCRIPTS / "bts.py")
    assert "torch" in third_party_imports(SCRIPTS / "embed.py", set())
    assert "PIL" in third_party_imports(SCRIPTS / "synthetic_dataset.py", set())
    # biastransfer.workflow.config's command (python -m) is the checker, which builds networks; importing it does not
    assert "torch" in third_party_imports(LIBRARY / "biastransfer" / "workflow" / "config_check.py", set())
    assert "torch" not in third_party_imports(LIBRARY / "biastransfer" / "workflow" / "config.py", set())
    with pytest.raises(AssertionError, match="no module"):
        library_files("biastransfer.no_such_module")


def env_packages(env: str) -> set[str]:
    deps = yaml.safe_load((ROOT / "envs" / env).read_text())["dependencies"]
    return {re.split(r"[=<> ]", d)[0] for d in deps if isinstance(d, str)}


@pytest.mark.parametrize("rule, env, script", rule_envs(), ids=lambda v: str(v))
def test_env_lists_what_the_script_imports(rule, env, script):
    assert env is not None, f"rule {rule} has no conda env"
    listed = env_packages(env)
    missing = {m for m in third_party_imports(SCRIPTS / script, set()) if not CONDA_NAMES.get(m, {m}) & listed}
    assert not missing, f"envs/{env} lacks {sorted(missing)} imported by {script} (rule {rule})"


def test_envs_pin_every_package():
    for env in (ROOT / "envs").glob("*.yaml"):
        for dep in yaml.safe_load(env.read_text())["dependencies"]:
            assert isinstance(dep, str) and "=" in dep, f"{env.name}: {dep!r} is not pinned"


def lock_versions() -> dict[str, str]:
    """``{normalised name: version}`` of requirements.lock (the tested environment)."""
    out = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            out[re.sub(r"[-_.]+", "-", name.lower())] = version.split(";")[0].strip()
    return out


PIP_NAMES = {"pytorch": "torch", "matplotlib-base": "matplotlib", "open-clip-torch": "open-clip-torch"}


@pytest.mark.parametrize("env", sorted(p.name for p in (ROOT / "envs").glob("*.yaml")))
def test_env_pins_are_the_tested_versions(env):
    """A conda env pins the versions requirements.lock tests (python aside), so 'tested' is true."""
    locked = lock_versions()
    for dep in yaml.safe_load((ROOT / "envs" / env).read_text())["dependencies"]:
        name, _, version = dep.partition("=")
        if name == "python":
            continue
        pip = re.sub(r"[-_.]+", "-", PIP_NAMES.get(name, name).lower())
        assert pip in locked, f"envs/{env}: {name} is not in requirements.lock"
        assert locked[pip] == version, f"envs/{env}: {name}={version}, but requirements.lock tests {locked[pip]}"
