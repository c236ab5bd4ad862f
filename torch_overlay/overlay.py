"""Materialise the patch series over the installed torch (and torchvision), without touching site-packages.

The overlay is a *shadow package tree*: a directory ``<entry>/torch`` that mirrors
the installed ``torch`` package.  Directories on the way to a patched file are
real directories; every other entry in them is a symlink to the installed one,
and each patched file is a real file holding the patched source.  Putting
``<entry>`` first on ``sys.path`` makes ``import torch`` load the shadow tree, so
``torch.__file__`` and every module's ``co_filename`` live under ``<entry>/torch``.
That matters because Dynamo's trace rules (``torch/_dynamo/trace_rules.py``)
classify code by comparing file paths against ``dirname(torch.__file__)``: a
patched module sits exactly where the rest of torch expects it.  Tracebacks,
``inspect`` and ``linecache`` read the real patched file on disk.

The companion torchvision series gets the same treatment in ``<entry>/torchvision``
when torchvision is installed (it is left out otherwise).

Each entry is keyed by every installed package a series patches (version,
location, the bytes of the files the series patches) and by the series content;
it is built in a temporary directory and renamed into place, so concurrent
builders never see a half-built tree and a stale entry is never reused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import py_compile
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import _git
from ._series import Patch, Series, Stack
from ._torch import InstalledPackage, find_installed, modified_files
from .errors import OverlayError

FORMAT = 2  # bump when the layout of a cache entry changes (2: __pycache__ in real directories)
METADATA = "overlay.json"
BUILD_PREFIX = ".build-"  # a build in progress (or one whose process died)


def cache_dir() -> Path:
    env = os.environ.get("TORCH_OVERLAY_CACHE")
    if env:
        return Path(env).resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache").resolve() / "torch_overlay"


def overlay_roots() -> list[str]:
    """``sys.path`` entries that are overlay entries (so that the installed torch can be found)."""
    root = str(cache_dir())
    return [
        str(Path(p).resolve())
        for p in sys.path
        if p and str(Path(p).resolve()).startswith(root + os.sep)
    ]


# --------------------------------------------------------------------------- applying


@dataclasses.dataclass
class PatchResult:
    patch: Patch
    applied: bool
    error: str = ""  # which file and hunk failed, in words


_FAILED_AT = re.compile(r"^error: patch failed: (\S+):(\d+)$", re.M)
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@", re.M)


def _describe_failure(patch: Patch, stderr: str) -> str:
    """Turn git-apply's complaint into 'file, hunk N (line L)'."""
    m = _FAILED_AT.search(stderr)
    if not m:
        return stderr.strip().splitlines()[-1] if stderr.strip() else "git apply failed"
    path, line = m.group(1), int(m.group(2))
    text = patch.path.read_text()
    section = text.split(f"diff --git a/{path} b/{path}\n", 1)[-1].split("\ndiff --git ", 1)[0]
    starts = [int(h) for h in _HUNK.findall(section)]
    hunk = starts.index(line) + 1 if line in starts else "?"
    return f"{path}: hunk {hunk} of {len(starts)} (at line {line}) does not apply"


def apply_series(tree: Path, patches: tuple[Patch, ...], keep_going: bool) -> list[PatchResult]:
    """Apply patches in order inside ``tree`` with zero fuzz (git apply never fuzzes)."""
    results = []
    for patch in patches:
        proc = _git.git(
            "apply", "--whitespace=nowarn", str(patch.path), cwd=tree, check=False
        )
        if proc.returncode == 0:
            results.append(PatchResult(patch, True))
            continue
        results.append(PatchResult(patch, False, _describe_failure(patch, proc.stderr.decode())))
        if not keep_going:
            break
    return results


# --------------------------------------------------------------------------- the tree


def _shadow_tree(dest: Path, pkg: InstalledPackage, files: list[str]) -> None:
    """Create ``dest/<pkg>`` linking to the installed package, with real files for ``files``."""
    real_dirs = {Path(pkg.name)}
    for f in files:
        rel = Path(f)
        if rel.parts[0] != pkg.name:
            raise OverlayError(
                f"the {pkg.name} series patches {f}, outside {pkg.name}/; "
                f"the overlay only carries {pkg.name}/ for it"
            )
        real_dirs.update(p for p in rel.parents if p != Path("."))
    for rel_dir in sorted(real_dirs, key=lambda p: len(p.parts)):
        (dest / rel_dir).mkdir()
        src_dir = pkg.root / rel_dir
        if not src_dir.is_dir():
            continue  # a directory the series creates
        for entry in os.scandir(src_dir):
            rel = rel_dir / entry.name
            if entry.name == "__pycache__" or rel in real_dirs or str(rel) in files:
                continue
            os.symlink(entry.path, dest / rel)
    for f in files:
        src = pkg.root / f
        if src.is_file():
            shutil.copyfile(src, dest / f)


def _bytecode_is_current(pyc: str, source: os.stat_result) -> bool:
    """Whether pyc is timestamp-based bytecode of this interpreter for source
    (what an import checks before it uses a cached module: PEP 552's header)."""
    try:
        with open(pyc, "rb") as f:
            header = f.read(16)
    except OSError:
        return False
    return (
        len(header) == 16
        and header[:4] == importlib.util.MAGIC_NUMBER
        and int.from_bytes(header[4:8], "little") == 0
        and int.from_bytes(header[8:12], "little") == int(source.st_mtime) & 0xFFFFFFFF
        and int.from_bytes(header[12:16], "little") == source.st_size & 0xFFFFFFFF
    )


def _bytecode(dest: Path, pkg: InstalledPackage, files: list[str]) -> None:
    """Give every module of ``dest/<pkg>``'s real directories its bytecode.

    An import looks for a module's bytecode in the ``__pycache__`` beside the
    path it imports it from, and a real directory has none of the installed
    one's: where bytecode is not written (``PYTHONDONTWRITEBYTECODE``, a
    read-only cache) every module of it, all of ``torch/_dynamo`` and
    ``torch/_inductor`` with a few patches, was compiled from source in every
    process (about 1.5 s more than BASE to import Inductor).  A linked module
    gets a link to the installed bytecode when that is current for its source;
    a patched module, or one without current bytecode, is compiled.  An
    import never writes through those links: it replaces a stale one.
    """
    patched = {str(dest / f) for f in files}
    for top, dirs, names in os.walk(dest / pkg.name):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not os.path.islink(os.path.join(top, d))]
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(top, name)
            cfile = importlib.util.cache_from_source(path)
            os.makedirs(os.path.dirname(cfile), exist_ok=True)
            if os.path.islink(path):
                installed = importlib.util.cache_from_source(os.readlink(path))
                if _bytecode_is_current(installed, os.stat(path)):
                    os.symlink(installed, cfile)
                    continue
            try:
                py_compile.compile(path, cfile=cfile, doraise=True)
            except py_compile.PyCompileError as e:
                if path in patched:
                    raise OverlayError(f"the series leaves {Path(path).relative_to(dest)} invalid: {e.msg}") from None
                # not a module of this Python (a template, another version's
                # syntax): it was not importable from site-packages either


@dataclasses.dataclass(frozen=True)
class Layer:
    """One series over the installed package it patches."""

    series: Series
    pkg: InstalledPackage


def layers(stack: Stack, force: bool = False) -> list[Layer]:
    """Each series with its installed package; refuses a package that is not the series' BASE.

    torch must be installed; a companion package (torchvision) that is not
    installed is left out, so the torch series works on its own.
    """
    out = []
    for series in stack.series:
        pkg = find_installed(series.package, required=series.package == "torch")
        if pkg is None:
            continue
        check_version(pkg, series, force)
        check_unmodified(pkg, series, force)
        out.append(Layer(series, pkg))
    if not out or out[0].pkg.name != "torch":
        raise OverlayError(f"{stack.dir} has no torch series")
    return out


def entry_key(layers_: list[Layer]) -> str:
    h = hashlib.sha256()
    h.update(f"format={FORMAT}\0".encode())
    for layer in layers_:
        pkg, series = layer.pkg, layer.series
        h.update(f"{pkg.name}\0{pkg.version}\0{pkg.git_version}\0{pkg.package_dir}\0".encode())
        h.update(series.digest().encode())
        for f in series.patched_files():
            src = pkg.root / f
            h.update(f.encode() + b"\0" + (src.read_bytes() if src.is_file() else b"<new>") + b"\0")
    return h.hexdigest()


def entry_path(layers_: list[Layer]) -> tuple[Path, str]:
    """Where the overlay entry for these packages and series lives, and its key."""
    key = entry_key(layers_)
    # Upstream's munge_exc (torch.testing._internal.common_utils) strips the
    # torch directory from messages with an unescaped re.sub: a "+" in the
    # path (2.13.0+cpu) would be a regex operator there, and tests that compare
    # munged messages would fail only under the overlay.
    version = re.sub(r"[^A-Za-z0-9._-]", "_", layers_[0].pkg.version)
    return cache_dir() / f"torch-{version}-{key[:20]}", key


def is_built(layers_: list[Layer]) -> bool:
    return _valid_entry(*entry_path(layers_))


def check_version(pkg: InstalledPackage, series: Series, force: bool) -> None:
    if series.base.matches_version(pkg.version) or force:
        return
    name, want = series.package, series.base.version
    raise OverlayError(
        f"installed {name} {pkg.version} ({pkg.package_dir}) is not the series' "
        f"BASE {name} {want}; install it with `pip install {name}=={want}`, "
        "or pass --force to try the series anyway"
    )


def unmodified_error(pkg: InstalledPackage, series: Series) -> str | None:
    """Why pkg is not its wheel as installed (files changed in site-packages), or None."""
    changed = modified_files(pkg)
    if not changed:
        return None
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return (
        f"installed {pkg.name} {pkg.version} ({pkg.package_dir}) differs from its wheel in "
        f"{len(changed)} Python file(s): {shown}; the overlay links every file the series does not "
        f"patch to the installed one, so reinstall it with `pip install --force-reinstall --no-deps "
        f"{pkg.name}=={series.base.version}`, or pass --force to use it anyway"
    )


def check_unmodified(pkg: InstalledPackage, series: Series, force: bool) -> None:
    if force:
        return
    error = unmodified_error(pkg, series)
    if error is not None:
        raise OverlayError(error)


def dry_run(series: Series, pkg: InstalledPackage) -> list[PatchResult]:
    """Apply every patch to a scratch copy, continuing past failures; writes no cache."""
    with tempfile.TemporaryDirectory(prefix="torch_overlay-status-") as tmp:
        _shadow_tree(Path(tmp), pkg, series.patched_files())
        return apply_series(Path(tmp), series.patches, keep_going=True)


@dataclasses.dataclass(frozen=True)
class Overlay:
    root: Path  # the directory to put first on sys.path
    layers: tuple[Layer, ...]  # torch's first
    built: bool  # False when an existing entry was reused

    @property
    def torch(self) -> InstalledPackage:
        return self.layers[0].pkg

    @property
    def series(self) -> Series:
        """The torch series."""
        return self.layers[0].series


def ensure(
    stack: Stack | None = None,
    *,
    force: bool = False,
    log=None,
) -> Overlay:
    """Return the overlay for the installed packages and their series, building it if needed."""
    stack = stack or Stack.load()
    layers_ = layers(stack, force)
    _git.require_git()
    final, key = entry_path(layers_)
    root = final.parent
    if _valid_entry(final, key):
        return Overlay(final, tuple(layers_), built=False)

    tmp = _new_build_dir(root)
    if log:
        what = " and ".join(
            f"{len(l.series.patches)} patch(es) over {l.pkg.name} {l.pkg.version}" for l in layers_
        )
        log(f"building overlay: {what}, in {final}")
    try:
        failed = []
        for layer in layers_:
            _shadow_tree(tmp, layer.pkg, layer.series.patched_files())
            results = apply_series(tmp, layer.series.patches, keep_going=force)
            if all(r.applied for r in results):
                _bytecode(tmp, layer.pkg, layer.series.patched_files())
            if force and log:
                for r in results:
                    log(f"  {r.patch.label}: {'applied' if r.applied else 'FAILED: ' + r.error}")
            failed += [(layer, r) for r in results if not r.applied]
        if failed:
            raise OverlayError(
                "the series does not apply to the installed packages; nothing was built:\n"
                + "\n".join(f"  {r.patch.label} ({l.pkg.name} {l.pkg.version}): {r.error}" for l, r in failed)
            )
        meta = {
            "key": key,
            "packages": [
                {
                    "name": l.pkg.name,
                    "version": l.pkg.version,
                    "git_version": l.pkg.git_version,
                    "dir": str(l.pkg.package_dir),
                    "base": dataclasses.asdict(l.series.base),
                    "patches": [p.name for p in l.series.patches],
                }
                for l in layers_
            ],
        }
        (tmp / METADATA).write_text(json.dumps(meta, indent=2) + "\n")
        try:
            os.rename(tmp, final)  # atomic: either the whole entry appears or none
        except OSError:
            if not _valid_entry(final, key):  # lost a race against an identical build? fine.
                raise
            shutil.rmtree(tmp, ignore_errors=True)
            return Overlay(final, tuple(layers_), built=False)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):
            raise _cache_error(root, e) from None
        raise
    return Overlay(final, tuple(layers_), built=True)


def clean(keep: Path | None, *, stale_build_seconds: float = 3600.0) -> list[Path]:
    """Remove cache entries other than ``keep``, and abandoned builds; return what was removed.

    An entry is a directory holding ``overlay.json``; anything else in the cache
    directory is left alone.  A build in progress is a ``.build-*`` directory: it
    is removed only when untouched for ``stale_build_seconds`` (its builder died).
    """
    root = cache_dir()
    if not root.is_dir():
        return []
    removed = []
    now = time.time()
    for child in sorted(root.iterdir()):
        if keep is not None and child.resolve() == keep.resolve():
            continue
        if child.name.startswith(BUILD_PREFIX):
            if now - child.stat().st_mtime < stale_build_seconds:
                continue
        elif not (child / METADATA).is_file():
            continue
        # Move it aside first, so no process ever sees a half-deleted entry.
        trash = root / f"{BUILD_PREFIX}trash-{child.name}-{os.getpid()}"
        try:
            os.rename(child, trash)
            shutil.rmtree(trash)
        except OSError as e:
            raise _cache_error(root, e) from None
        removed.append(child)
    return removed


def _cache_error(root: Path, e: OSError) -> OverlayError:
    why = e.strerror or type(e).__name__
    where = e.filename or root
    return OverlayError(
        f"cannot write the overlay cache {root} ({why}: {where}); "
        "set TORCH_OVERLAY_CACHE to a writable directory"
    )


def _new_build_dir(root: Path) -> Path:
    """A private scratch directory inside the cache, or one clear error if the cache is unusable."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=BUILD_PREFIX, dir=root))
    except OSError as e:
        raise _cache_error(root, e) from None
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; the entry is an ordinary package tree
    return tmp


def _valid_entry(path: Path, key: str) -> bool:
    try:
        meta = json.loads((path / METADATA).read_text())
    except (OSError, ValueError):
        return False
    return meta.get("key") == key and (path / "torch" / "__init__.py").is_file()


# --------------------------------------------------------------------------- activation


def activate(patches_dir: Path | None = None, *, force: bool = False) -> Overlay:
    """Make the next ``import torch`` in this process load the patched tree.

    Call this before anything imports torch.  It refuses when torch is already
    imported, because the unpatched modules would stay in ``sys.modules``.
    """
    if "torch" in sys.modules:
        where = getattr(sys.modules["torch"], "__file__", "?")
        raise OverlayError(
            f"torch is already imported (from {where}); call torch_overlay.activate() "
            "before the first `import torch`, or run the script under "
            "`python -m torch_overlay run -- python SCRIPT`"
        )
    overlay = ensure(Stack.load(patches_dir) if patches_dir else None, force=force)
    entry = str(overlay.root)
    if entry not in sys.path:
        sys.path.insert(0, entry)
    import importlib

    importlib.invalidate_caches()
    return overlay


def is_active() -> bool:
    """True when the imported torch is an overlay's."""
    torch = sys.modules.get("torch")
    file = getattr(torch, "__file__", None)
    return bool(file) and str(Path(file).parent.parent).startswith(str(cache_dir()) + os.sep)


def child_env(overlay: Overlay, env: dict[str, str] | None = None) -> dict[str, str]:
    """An environment in which any Python process imports the overlay's torch."""
    env = dict(os.environ if env is None else env)
    parts = [str(overlay.root)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["TORCH_OVERLAY_ROOT"] = str(overlay.root)
    return env
