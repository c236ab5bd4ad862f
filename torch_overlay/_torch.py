"""Find an installed package (torch, torchvision) without importing it.

The overlay has to decide where torch lives, and which version it is, before
``import torch`` runs: importing it first would pin the unpatched modules in
``sys.modules``.  The same holds for torchvision.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.machinery
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

from .errors import OverlayError


@dataclasses.dataclass(frozen=True)
class InstalledPackage:
    version: str
    git_version: str
    package_dir: Path  # .../site-packages/torch
    name: str = "torch"

    @property
    def root(self) -> Path:
        """The directory that holds the ``torch`` package (site-packages)."""
        return self.package_dir.parent


def _read_version_py(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return values
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            values[node.targets[0].id] = node.value.value
    return values


def find_installed(name: str, *, required: bool = True) -> InstalledPackage | None:
    """The installed ``name`` package outside any overlay; None if absent and not ``required``."""
    from .overlay import overlay_roots  # the overlay itself must not count as "installed"

    hidden = set(overlay_roots())
    path = [p for p in sys.path if str(Path(p or ".").resolve()) not in hidden]
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or not spec.submodule_search_locations:
        if not required:
            return None
        raise OverlayError(
            f"{name} is not installed in this Python environment ({sys.executable}); "
            "install the pinned releases with `pip install torch==2.13.0 -e '.[test]'`"
        )
    package_dir = Path(list(spec.submodule_search_locations)[0]).resolve()
    info = _read_version_py(package_dir / "version.py")
    version = info.get("__version__")
    if version is None:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            raise OverlayError(f"cannot tell the version of the {name} in {package_dir}") from None
    return InstalledPackage(
        version=version, git_version=info.get("git_version", "unknown"), package_dir=package_dir, name=name
    )


def modified_files(pkg: InstalledPackage) -> list[str] | None:
    """The Python files of ``pkg`` whose bytes differ from the hashes its
    wheel's RECORD lists (or that are gone), by path from site-packages; None
    when no installed distribution lists them.

    Every file the series does not patch is a symlink from the overlay to the
    installed one: a write into site-packages (through such a symlink, too)
    would reach every overlay entry and BASE alike, and go unseen.
    """
    import base64
    import hashlib

    for dist in importlib.metadata.distributions(path=[str(pkg.root)]):
        if (dist.metadata["Name"] or "").lower() != pkg.name:
            continue
        files = dist.files
        if not files:
            return None
        changed = []
        for f in files:
            name = f.as_posix()
            if f.hash is None or not name.startswith(pkg.name + "/") or not name.endswith(".py"):
                continue
            try:
                data = (pkg.root / name).read_bytes()
            except OSError:
                changed.append(name)
                continue
            digest = hashlib.new(f.hash.mode, data).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != f.hash.value:
                changed.append(name)
        return changed
    return None


def find_installed_torch() -> InstalledPackage:
    return find_installed("torch")


# The name the rest of the tooling used before the torchvision series.
InstalledTorch = InstalledPackage
