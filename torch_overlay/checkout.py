"""The series on a pytorch git checkout: apply, export, and the round-trip check.

One implementation serves the CLI (``python -m torch_overlay apply|export|check``)
and ``scripts/``.  ``check`` runs the very same ``apply`` and ``export`` on a
*base tree*: a git repository made from the installed wheel's ``torch/**/*.py``
and committed as BASE, which stands in for a pytorch checkout at BASE.
"""

from __future__ import annotations

import difflib
import re
import shutil
import tempfile
from pathlib import Path

from . import _git
from ._series import REPO_ROOT, Series, Stack, parse_patch
from ._torch import InstalledPackage
from .errors import OverlayError

# Exported exactly like this, re-exporting a branch gives identical bytes.
FORMAT_PATCH_ARGS = (
    "format-patch",
    "--stdout",
    "--zero-commit",
    "--full-index",
    "--no-signature",
    "--keep-subject",
    "--no-stat",
    "--no-renames",
    "--no-color",
    "--encoding=UTF-8",
)
BASE_TREE_TRAILER = "Base-Tree-Of"  # marks the root commit of a base tree
TESTS_COMMIT_TRAILER = "Torch-Overlay-Tests"  # marks the commit that only adds regression tests
# The commit that carries a series' regression tests (tests owned by no patch).
REGRESSION_COMMIT = {
    "torch": "[dynamo] Add torchvision-style dispatch regression tests\n\n"
    "Constructs that already compile with fullgraph=True on BASE; these\n"
    "tests keep them that way.",
    "torchvision": "Add torch.compile conformance tests that pass on this release\n\n"
    "v2 functionals and transforms that already compile with fullgraph=True;\n"
    "these tests keep them that way.",
}


def _slug(subject: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", subject.lower()).strip("-")[:72].rstrip("-")


# --------------------------------------------------------------------------- base tree


def build_base_tree(dest: Path, pkg: InstalledPackage, base_commit: str) -> Path:
    """A git repo holding the wheel's ``<pkg>/**/*.py`` as one commit that stands for BASE."""
    dest.mkdir(parents=True, exist_ok=True)
    _git.git("init", "-q", "-b", "main", cwd=dest)
    for src in pkg.package_dir.rglob("*.py"):
        rel = src.relative_to(pkg.root)
        if "__pycache__" in rel.parts:
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest / rel)
    _git.git("add", "-A", cwd=dest)
    msg = (
        f"BASE: {pkg.name} {pkg.version} Python sources from the installed wheel\n\n"
        f"{BASE_TREE_TRAILER}: {base_commit}\n"
    )
    _git.git("commit", "-q", "-m", msg, cwd=dest, env=_git.FIXED_IDENTITY)
    return dest


# --------------------------------------------------------------------------- apply


def _is_dirty(checkout: Path) -> bool:
    return bool(_git.out("status", "--porcelain", "--untracked-files=no", cwd=checkout))


def _base_rev(checkout: Path, series: Series) -> str:
    """The commit in HEAD's history that stands for BASE; refuse a checkout without one."""
    commit = series.base.commit
    if _git.git("cat-file", "-e", f"{commit}^{{commit}}", cwd=checkout, check=False).returncode == 0:
        if _git.git("merge-base", "--is-ancestor", commit, "HEAD", cwd=checkout, check=False).returncode == 0:
            return commit
        raise OverlayError(
            f"HEAD of {checkout} does not contain BASE {commit}; check out BASE "
            "(or a descendant of it) first"
        )
    roots = _git.out(
        "log", "--format=%H", f"--grep=^{BASE_TREE_TRAILER}: {commit}$", "HEAD", cwd=checkout
    ).split()
    if roots:
        return roots[-1]
    raise OverlayError(
        f"{checkout}: HEAD is not BASE {commit} or a descendant of it "
        "(that commit is not in the repository; fetch it, or use a base tree)"
    )


def _test_files_of(patch) -> list[str]:
    return list(dict.fromkeys(t.split("::", 1)[0] for t in patch.tests))


def _helper_files(series: Series) -> list[str]:
    """Non-test modules of a series' test dir (the torchvision-style model, conftest.py) that tests import."""
    return sorted(
        f"{series.test_dir}/{p.name}"
        for p in (REPO_ROOT / series.test_dir).glob("*.py")
        if not p.name.startswith("test_")
    )


def series_for(checkout: Path, stack: Stack, package: str | None = None) -> Series:
    """The series whose BASE the checkout's HEAD contains (or the one named by ``package``)."""
    if package:
        return stack.get(package)
    checkout = checkout.resolve()
    if not (checkout / ".git").exists():
        raise OverlayError(f"{checkout} is not a git checkout")
    for series in stack.series:
        try:
            _base_rev(checkout, series)
        except OverlayError:
            continue
        return series
    raise OverlayError(
        f"HEAD of {checkout} contains none of the series' BASE commits ("
        + ", ".join(f"{s.package} {s.base.commit[:12]}" for s in stack.series)
        + "); check out BASE (or a descendant), or use a base tree"
    )


def apply(
    checkout: Path,
    series: Series,
    branch: str,
    *,
    with_tests: bool = True,
    env: dict[str, str] | None = None,
    log=print,
) -> None:
    """``git am`` the series onto a new branch, each commit carrying its own tests.

    The tests that go with a patch (its ``Tests:`` trailer, plus the model they
    import) are amended into that patch's commit, so each commit is one upstream
    PR.  Regression tests that belong to no patch land in a final commit marked
    with a ``Torch-Overlay-Tests`` trailer, which ``export`` skips.
    """
    checkout = checkout.resolve()
    if not (checkout / ".git").exists():
        raise OverlayError(f"{checkout} is not a git checkout")
    if _is_dirty(checkout):
        raise OverlayError(f"{checkout} has uncommitted changes; commit or stash them first")
    if _git.git("rev-parse", "--verify", "-q", f"refs/heads/{branch}", cwd=checkout, check=False).returncode == 0:
        raise OverlayError(f"branch {branch!r} already exists in {checkout}; pick another with --branch")
    _base_rev(checkout, series)
    start = _git.out("rev-parse", "--abbrev-ref", "HEAD", cwd=checkout)
    if start == "HEAD":
        start = _git.out("rev-parse", "HEAD", cwd=checkout)
    _git.git("checkout", "-q", "-b", branch, cwd=checkout)
    try:
        pending_helpers = _helper_files(series) if with_tests else []
        for i, patch in enumerate(series.patches, 1):
            log(f"[{i}/{len(series.patches)}] {patch.subject}")
            proc = _git.git("am", "-q", "--keep", str(patch.path), cwd=checkout, check=False, env=env)
            if proc.returncode != 0:
                _git.git("am", "--abort", cwd=checkout, check=False)
                if _applies_in_reverse(checkout, patch):
                    raise OverlayError(
                        f"{patch.name} is already in {checkout} (it applies in reverse at "
                        f"{start}): the series, or this patch, is already applied; nothing was changed"
                    )
                why = "\n".join(
                    line for line in proc.stderr.decode().splitlines() if not line.startswith("hint:")
                )
                raise OverlayError(
                    f"{patch.name} does not apply to {checkout} (nothing was left applied):\n{why}"
                )
            if with_tests:
                files = pending_helpers + _test_files_of(patch)
                pending_helpers = []
                if _copy_tests(checkout, files):
                    _git.git("commit", "-q", "--amend", "--no-edit", cwd=checkout, env=env)
        if with_tests:
            owned = {f for p in series.patches for f in _test_files_of(p)}
            rest = pending_helpers + sorted(
                f"{series.test_dir}/{p.name}"
                for p in (REPO_ROOT / series.test_dir).glob("test_*.py")
                if f"{series.test_dir}/{p.name}" not in owned
            )
            if _copy_tests(checkout, rest):
                _git.git(
                    "commit", "-q", "-m",
                    f"{REGRESSION_COMMIT[series.package]}\n\n{TESTS_COMMIT_TRAILER}: regression\n",
                    cwd=checkout,
                    env=env,
                )
    except BaseException:
        # Leave nothing half-written: back to where we started, branch gone.
        _git.git("am", "--abort", cwd=checkout, check=False)
        _git.git("checkout", "-q", "-f", start, cwd=checkout, check=False)
        _git.git("branch", "-q", "-D", branch, cwd=checkout, check=False)
        raise
    log(f"applied {len(series.patches)} patch(es) to {checkout} on branch {branch}")


def _applies_in_reverse(checkout: Path, patch) -> bool:
    proc = _git.git("apply", "--check", "--reverse", str(patch.path), cwd=checkout, check=False)
    return proc.returncode == 0


def _copy_tests(checkout: Path, files: list[str]) -> bool:
    for f in files:
        src = REPO_ROOT / f
        if not src.is_file():
            raise OverlayError(f"a patch names the test file {f}, which does not exist in {REPO_ROOT}")
        (checkout / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, checkout / f)
    if files:
        _git.git("add", "--", *files, cwd=checkout)
    return bool(_git.out("diff", "--cached", "--name-only", cwd=checkout))


# --------------------------------------------------------------------------- export


def export_patches(checkout: Path, series: Series) -> dict[str, bytes]:
    """Format each commit since BASE as a patch (code only; tests live in this repo)."""
    checkout = checkout.resolve()
    base = _base_rev(checkout, series)
    commits = _git.out("rev-list", "--reverse", f"{base}..HEAD", cwd=checkout).split()
    out: dict[str, bytes] = {}
    for c in commits:
        message = _git.out("log", "-1", "--format=%B", c, cwd=checkout)
        if re.search(rf"^{TESTS_COMMIT_TRAILER}: ", message, re.M):
            continue
        data = _git.git(
            *FORMAT_PATCH_ARGS, "-1", c, "--", ".", f":(exclude){series.test_dir}", cwd=checkout
        ).stdout
        if b"\ndiff --git " not in data:
            raise OverlayError(f"commit {c[:12]} changes nothing outside {series.test_dir}; cannot export it")
        subject = _git.out("log", "-1", "--format=%s", c, cwd=checkout)
        name = _slug(subject) + ".patch"
        if name in out:
            raise OverlayError(f"two commits export to {name}; give them distinct subjects")
        out[name] = data
    if not out:
        raise OverlayError(f"no commits to export between BASE and HEAD in {checkout}")
    return out


def write_patches(patches: dict[str, bytes], dest: Path) -> None:
    """Replace the series in ``dest`` (BASE is left alone); validate before writing anything."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in patches.items():
            (Path(tmp) / name).write_bytes(data)
            parse_patch(Path(tmp) / name)
    old = {p.name for p in Series.load(dest).patches} if (dest / "series").exists() else set()
    for name, data in patches.items():
        tmp = dest / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(dest / name)
    for name in old - set(patches):
        (dest / name).unlink(missing_ok=True)
    (dest / ".series.tmp").write_text("".join(f"{n}\n" for n in patches))
    (dest / ".series.tmp").replace(dest / "series")


# --------------------------------------------------------------------------- check


def check(series: Series, pkg: InstalledPackage, log=print) -> list[str]:
    """Apply the series to a fresh base tree with zero fuzz, re-export, compare bytes.

    Returns a list of problems (empty when the series round-trips exactly).
    """
    with tempfile.TemporaryDirectory(prefix="torch_overlay-check-") as tmp:
        tree = Path(tmp) / series.package
        log(f"building a {series.package} base tree from {pkg.package_dir} ...")
        build_base_tree(tree, pkg, series.base.commit)
        apply(tree, series, "torch-overlay-check", env=_git.FIXED_IDENTITY, log=log)
        exported = export_patches(tree, series)
    problems = []
    names = [p.name for p in series.patches]
    if list(exported) != names:
        problems.append(f"series order/names drift: {series.dir / 'series'} has {names}, export gives {list(exported)}")
    for p in series.patches:
        new = exported.get(p.name)
        if new is not None and new != p.data:
            diff = difflib.unified_diff(
                p.data.decode().splitlines(), new.decode().splitlines(),
                f"{series.dir.name}/{p.name}", f"re-exported/{p.name}", lineterm="", n=1,
            )
            problems.append(f"{p.name} drifts from its re-export:\n" + "\n".join(list(diff)[:40]))
    return problems
