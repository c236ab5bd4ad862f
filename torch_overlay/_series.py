"""Reading ``patches/``: the BASE pins, the series order and each patch's header.

``patches/`` is the single source of truth.  It holds one directory per
package the project patches, each laid out the same way::

    patches/torch/        BASE, series, *.patch   (the Dynamo/Inductor series)
    patches/torchvision/  BASE, series, *.patch   (the companion torchvision series)

``BASE`` names the package, its release and the upstream commit the series
applies to (``torch 2.13.0`` / ``commit <sha>``).  A directory that itself holds
``BASE`` (a scratch export) is read as a stack of that one series.  Everything
else (the overlay, the checkout workflow, the drift check, the suite's
failing-first check) reads the series through this module, so there is exactly
one parser for it.
"""

from __future__ import annotations

import dataclasses
import email.header
import hashlib
import os
import re
from pathlib import Path

from .errors import OverlayError

REPO_ROOT = Path(__file__).resolve().parent.parent

# Trailers we read from a patch's commit message (DEP-3 in spirit, git-trailer in form).
TESTS_TRAILER = "Tests"
# An upstream test (``test/dynamo/test_x.py::Class::test``) that pins the behaviour
# the patch changes on purpose: its pull request updates the test, and the
# differential upstream run reports the change as such, not as a regression.
UPDATES_TRAILER = "Updates-upstream-test"


def default_patches_dir() -> Path:
    env = os.environ.get("TORCH_OVERLAY_PATCHES")
    return Path(env).resolve() if env else REPO_ROOT / "patches"


# The packages a series may patch, in the order the stack applies them, and
# where the tests of each package's series live in this repository.
PACKAGES = ("torch", "torchvision")
TEST_DIRS = {"torch": "test/dynamo", "torchvision": "test/torchvision"}


@dataclasses.dataclass(frozen=True)
class Base:
    version: str
    commit: str
    package: str = "torch"

    @classmethod
    def read(cls, patches_dir: Path) -> "Base":
        path = patches_dir / "BASE"
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise OverlayError(f"{path} is missing: the series has no BASE pin") from None
        fields = dict(
            line.split(None, 1) for line in text.splitlines() if line.strip()
        )
        packages = [k for k in fields if k in PACKAGES]
        if len(packages) != 1:
            raise OverlayError(
                f"{path}: expected one line naming the package and its release "
                f"({' or '.join(PACKAGES)}), found {packages or 'none'}"
            )
        try:
            return cls(version=fields[packages[0]].strip(), commit=fields["commit"].strip(), package=packages[0])
        except KeyError as e:
            raise OverlayError(f"{path}: missing the '{e.args[0]}' line") from None

    def matches_version(self, installed: str) -> bool:
        """``2.13.0`` matches ``2.13.0`` and local builds such as ``2.13.0+cpu``."""
        return installed.split("+", 1)[0] == self.version


@dataclasses.dataclass(frozen=True)
class Patch:
    name: str  # file name inside patches/
    path: Path
    subject: str
    description: str  # message body without the trailers
    trailers: tuple[tuple[str, str], ...]
    files: tuple[str, ...]  # repo-relative paths the diff touches
    package: str = "torch"  # the package (series) the patch belongs to

    @property
    def label(self) -> str:
        """The patch's name, qualified with its series unless that is torch's."""
        return self.name if self.package == "torch" else f"{self.package}/{self.name}"

    @property
    def data(self) -> bytes:
        return self.path.read_bytes()

    @property
    def tests(self) -> tuple[str, ...]:
        """pytest node ids (``file::Class[::test]``) that this patch makes pass."""
        return tuple(v for k, v in self.trailers if k == TESTS_TRAILER)

    def trailer(self, key: str) -> list[str]:
        return [v for k, v in self.trailers if k == key]


_TRAILER_RE = re.compile(r"^([A-Za-z][A-Za-z0-9-]*): (.+)$")
_DIFF_RE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


def parse_patch(path: Path, package: str = "torch") -> Patch:
    text = path.read_text(encoding="utf-8")
    # format-patch writes headers, a blank line, the message, then (with a
    # diffstat) a "---" line, then the diffs.
    head, sep, diff = text.partition("\ndiff --git ")
    diff = sep + diff
    head = head.split("\n---\n", 1)[0]
    if not sep or "\n\n" not in head:
        raise OverlayError(f"{path}: not a `git format-patch` file (no message or no diff)")
    headers, body = head.split("\n\n", 1)
    subject_lines: list[str] = []
    for line in headers.splitlines():
        if line.startswith("Subject: "):
            subject_lines.append(line[len("Subject: ") :])
        elif subject_lines and line.startswith(" "):
            subject_lines.append(line)
        elif subject_lines:
            break
    if not subject_lines:
        raise OverlayError(f"{path}: no Subject header")
    subject = str(email.header.make_header(email.header.decode_header("".join(subject_lines))))

    paragraphs = body.rstrip("\n").split("\n\n")
    trailers: list[tuple[str, str]] = []
    last = paragraphs[-1].splitlines() if paragraphs else []
    if last and all(_TRAILER_RE.match(line) for line in last):
        trailers = [_TRAILER_RE.match(line).groups() for line in last]  # type: ignore[union-attr]
        paragraphs = paragraphs[:-1]
    files = tuple(dict.fromkeys(m.group(2) for m in _DIFF_RE.finditer(diff)))
    if not files:
        raise OverlayError(f"{path}: the patch has no diff")
    return Patch(
        name=path.name,
        path=path,
        subject=subject,
        description="\n\n".join(paragraphs),
        trailers=tuple(trailers),
        files=files,
        package=package,
    )


@dataclasses.dataclass(frozen=True)
class Series:
    dir: Path
    base: Base
    patches: tuple[Patch, ...]

    @classmethod
    def load(cls, patches_dir: Path | None = None) -> "Series":
        patches_dir = patches_dir or default_patches_dir()
        if not patches_dir.is_dir():
            raise OverlayError(f"patches directory not found: {patches_dir}")
        base = Base.read(patches_dir)
        series_file = patches_dir / "series"
        try:
            names = [
                line.strip()
                for line in series_file.read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")
            ]
        except FileNotFoundError:
            raise OverlayError(f"{series_file} is missing") from None
        patches = []
        for name in names:
            path = patches_dir / name
            if not path.is_file():
                raise OverlayError(f"{series_file} lists {name}, which does not exist")
            patches.append(parse_patch(path, base.package))
        return cls(dir=patches_dir, base=base, patches=tuple(patches))

    @property
    def package(self) -> str:
        return self.base.package

    @property
    def test_dir(self) -> str:
        return TEST_DIRS[self.package]

    def digest(self) -> str:
        """Content hash of the series: BASE, order and every patch's bytes."""
        h = hashlib.sha256()
        h.update((self.dir / "BASE").read_bytes())
        for p in self.patches:
            h.update(p.name.encode() + b"\0" + p.data + b"\0")
        return h.hexdigest()

    def patched_files(self) -> list[str]:
        return list(dict.fromkeys(f for p in self.patches for f in p.files))

    def select(self, which: str) -> Patch:
        """A patch by 1-based index or by file name."""
        if which.isdigit() and 1 <= int(which) <= len(self.patches):
            return self.patches[int(which) - 1]
        for p in self.patches:
            if which in (p.name, p.name.removesuffix(".patch")):
                return p
        if not self.patches:
            raise OverlayError(f"no patch {which!r}: the {self.package} series is empty")
        raise OverlayError(
            f"no patch {which!r}: give a number from 1 to {len(self.patches)} or a file name "
            f"from {self.dir / 'series'} (`python -m torch_overlay status` lists them)"
        )


@dataclasses.dataclass(frozen=True)
class Stack:
    """Every series under ``patches/``: torch's first, then the companion series."""

    dir: Path
    series: tuple[Series, ...]

    @classmethod
    def load(cls, root: Path | None = None) -> "Stack":
        root = root or default_patches_dir()
        if not root.is_dir():
            raise OverlayError(f"patches directory not found: {root}")
        if (root / "BASE").exists():  # one series on its own (e.g. a scratch export)
            return cls(dir=root, series=(Series.load(root),))
        found = [Series.load(root / name) for name in PACKAGES if (root / name / "BASE").exists()]
        if not found:
            raise OverlayError(
                f"{root} holds no series: expected {', '.join(f'{p}/BASE' for p in PACKAGES)}"
            )
        seen = [s.package for s in found]
        for s in found:
            if s.dir.name != s.package:
                raise OverlayError(f"{s.dir / 'BASE'} pins {s.package}, but lives in {s.dir.name}/")
        if len(set(seen)) != len(seen):
            raise OverlayError(f"{root}: two series patch the same package")
        return cls(dir=root, series=tuple(found))

    @property
    def torch(self) -> Series:
        return self.get("torch")

    def get(self, package: str) -> Series:
        for s in self.series:
            if s.package == package:
                return s
        raise OverlayError(f"no {package} series in {self.dir}")

    @property
    def patches(self) -> tuple[Patch, ...]:
        return tuple(p for s in self.series for p in s.patches)

    def digest(self) -> str:
        h = hashlib.sha256()
        for s in self.series:
            h.update(s.package.encode() + b"\0" + s.digest().encode() + b"\0")
        return h.hexdigest()

    def select(self, which: str) -> tuple[Series, Patch]:
        """``N`` or a file name (torch's series), or ``PACKAGE:N`` / ``PACKAGE:NAME``."""
        package, sep, rest = which.partition(":")
        if sep:
            if package not in PACKAGES:
                raise OverlayError(f"no series {package!r}: expected one of {', '.join(PACKAGES)}")
            series = self.get(package)
            return series, series.select(rest)
        for s in self.series[1:]:
            if any(which in (p.name, p.name.removesuffix(".patch")) for p in s.patches):
                return s, s.select(which)
        series = self.series[0]
        return series, series.select(which)
