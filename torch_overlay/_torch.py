"""Find the installed torch without importing it.

The overlay has to decide where torch lives, and which version it is, before
``import torch`` runs: importing it first would pin the unpatched modules in
``sys.modules``.
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
class InstalledTorch:
    version: str
    git_version: str
    package_dir: Path  # .../site-packages/torch

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


def find_installed_torch() -> InstalledTorch:
    from .overlay import overlay_roots  # the overlay itself must not count as "installed"

    hidden = set(overlay_roots())
    path = [p for p in sys.path if str(Path(p or ".").resolve()) not in hidden]
    spec = importlib.machinery.PathFinder.find_spec("torch", path)
    if spec is None or not spec.submodule_search_locations:
        raise OverlayError(
            "torch is not installed in this Python environment "
            f"({sys.executable}); install the pinned base with `pip install torch==2.13.0`"
        )
    package_dir = Path(list(spec.submodule_search_locations)[0]).resolve()
    info = _read_version_py(package_dir / "version.py")
    version = info.get("__version__")
    if version is None:
        try:
            version = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            raise OverlayError(f"cannot tell the version of the torch in {package_dir}") from None
    return InstalledTorch(
        version=version, git_version=info.get("git_version", "unknown"), package_dir=package_dir
    )
