"""The command line's failure modes: each ends in one line on stderr and exit 2.

These are the tooling's own tests (plain pytest), run by ``python -m
torch_overlay test`` before the drift check.  Each runs the CLI in a child
process, the way a user does, with a deliberately broken environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PATCHES = REPO / "patches" / "torch"


def run(*args, env=None, cwd=REPO, timeout=600):
    full = dict(os.environ)
    full.pop("TORCH_OVERLAY_ROOT", None)
    full["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in full.get("PYTHONPATH", "").split(os.pathsep) if p])
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "torch_overlay", *args],
        cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout,
    )


def assert_one_line_error(proc, *needles):
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(lines) >= 1 and lines[-1].startswith("torch_overlay: error: "), proc.stderr[-3000:]
    error = lines[-1]
    for needle in needles:
        assert needle in error, (needle, error)
    return error


def first_patches(tmp_path: Path, n: int) -> Path:
    """A patches directory holding BASE and the first ``n`` patches of the series."""
    dest = tmp_path / "patches"
    dest.mkdir()
    names = [line.strip() for line in (PATCHES / "series").read_text().splitlines() if line.strip()][:n]
    shutil.copy(PATCHES / "BASE", dest / "BASE")
    for name in names:
        shutil.copy(PATCHES / name, dest / name)
    (dest / "series").write_text("".join(f"{n}\n" for n in names))
    return dest


def build_overlay(tmp_path: Path, n: int = 1) -> tuple[dict, Path]:
    """Build the overlay of the series' first ``n`` patches in a fresh cache: the env, the entry."""
    env = {"TORCH_OVERLAY_CACHE": str(tmp_path / "cache"), "TORCH_OVERLAY_PATCHES": str(first_patches(tmp_path, n))}
    built = run("build", env=env)
    assert built.returncode == 0, built.stderr
    return env, Path(built.stdout.strip())


# --------------------------------------------------------------------------- a broken test environment


def test_missing_numpy_stops_the_suite_in_one_line(tmp_path):
    # torch's own test helpers import numpy; without it every test module fails to collect.
    shadow = tmp_path / "shadow"
    (shadow / "numpy").mkdir(parents=True)
    (shadow / "numpy" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n"
    )
    start = time.monotonic()
    proc = run(
        "test", "--skip-check", "test/dynamo/test_tv_isinstance.py",
        env={"PYTHONPATH": f"{shadow}{os.pathsep}{REPO}", "TORCH_OVERLAY_CACHE": str(tmp_path / "cache")},
    )
    error = assert_one_line_error(
        proc, "the test environment is broken", "No module named 'numpy'", "pip install -e '.[test]'"
    )
    assert len(error) < 200, error
    # it stops before running anything: no pytest output, no patched half
    assert "[2/2]" not in proc.stdout and "passed" not in proc.stdout, proc.stdout
    assert time.monotonic() - start < 120


def test_collection_error_names_the_module_and_its_cause():
    from torch_overlay.errors import OverlayError
    from torch_overlay.suite import PytestRun, check_collected

    run_ = PytestRun(
        2, {"test/dynamo/test_a.py": "error", "test/dynamo/test_b.py": "error"},
        {"test/dynamo/test_a.py": "ImportError: cannot import name 'x'", "test/dynamo/test_b.py": "E"}, "",
    )
    with pytest.raises(OverlayError) as e:
        check_collected(run_, "base")
    assert str(e.value) == (
        "the base run could not collect test/dynamo/test_a.py: ImportError: cannot import name 'x' "
        "(and 1 more module(s))"
    )


# --------------------------------------------------------------------------- the cache


@pytest.mark.parametrize("command", [["build"], ["run", "--", sys.executable, "-c", "pass"], ["audit"]])
def test_uncreatable_cache_is_one_line(tmp_path, command):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cache = blocker / "cache"  # its parent is a file: cannot be created
    proc = run(*command, env={"TORCH_OVERLAY_CACHE": str(cache)})
    assert_one_line_error(proc, "cannot write the overlay cache", str(cache), "TORCH_OVERLAY_CACHE")


def test_activate_with_uncreatable_cache_raises_overlay_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = (
        "import torch_overlay\n"
        "try:\n"
        "    torch_overlay.activate()\n"
        "except torch_overlay.OverlayError as e:\n"
        "    print('OverlayError:', e)\n"
    )
    env = dict(os.environ, TORCH_OVERLAY_CACHE=str(blocker / "cache"), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("OverlayError: cannot write the overlay cache"), proc.stdout
    assert "\n" not in proc.stdout.strip()


def test_unwritable_cache_is_an_overlay_error(tmp_path, monkeypatch):
    # As root a read-only directory is still writable, so make mkdtemp refuse.
    import tempfile

    from torch_overlay import overlay
    from torch_overlay.errors import OverlayError

    def refuse(*args, dir=None, **kw):
        raise PermissionError(13, "Permission denied", os.path.join(dir, ".build-xyz"))

    monkeypatch.setenv("TORCH_OVERLAY_CACHE", str(tmp_path))
    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    with pytest.raises(OverlayError) as e:
        overlay._new_build_dir(tmp_path)
    assert str(e.value) == (
        f"cannot write the overlay cache {tmp_path} (Permission denied: {tmp_path}/.build-xyz); "
        "set TORCH_OVERLAY_CACHE to a writable directory"
    )


def test_series_that_does_not_apply_leaves_nothing_in_the_cache(tmp_path):
    patches = first_patches(tmp_path, 2)
    broken = patches / (patches / "series").read_text().split()[1]
    text = broken.read_text()
    hunk = text.index("\n@@ ")
    # change one context line of the first hunk: the patch no longer applies
    line_start = text.index("\n ", hunk + 1) + 1
    broken.write_text(text[:line_start] + " # drifted" + text[line_start:])
    cache = tmp_path / "cache"
    proc = run("build", env={"TORCH_OVERLAY_CACHE": str(cache), "TORCH_OVERLAY_PATCHES": str(patches)})
    assert proc.returncode == 2, proc.stderr
    assert "does not apply" in proc.stderr and "Traceback" not in proc.stderr
    assert list(cache.iterdir()) == []

    status = run("status", env={"TORCH_OVERLAY_CACHE": str(cache), "TORCH_OVERLAY_PATCHES": str(patches)})
    assert status.returncode == 1
    assert "DOES NOT APPLY" in status.stdout
    assert "cannot be built until every patch applies" in status.stdout
    assert "`build` or `run` builds it" not in status.stdout


def test_clean_removes_stale_entries_and_abandoned_builds(tmp_path):
    env, current = build_overlay(tmp_path)
    cache = Path(env["TORCH_OVERLAY_CACHE"])
    stale = cache / "torch-2.13.0-0123456789abcdef0123"
    stale.mkdir()
    (stale / "overlay.json").write_text(json.dumps({"key": "old"}))
    abandoned = cache / ".build-dead"
    abandoned.mkdir()
    os.utime(abandoned, (time.time() - 7200, time.time() - 7200))
    in_progress = cache / ".build-live"
    in_progress.mkdir()
    unrelated = cache / "notes.txt"
    unrelated.write_text("not ours")

    proc = run("clean", env=env)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in cache.iterdir()) == sorted([current.name, ".build-live", "notes.txt"])
    assert "2 cache entries removed" in proc.stdout

    proc = run("clean", "--all", env=env)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in cache.iterdir()) == [".build-live", "notes.txt"]


def test_every_module_of_an_overlay_directory_has_current_bytecode(tmp_path):
    # An overlay directory on the way to a patched file is a real directory,
    # without the installed __pycache__: where bytecode is not written, each
    # of its modules was compiled from source in every process.
    import importlib.machinery
    import importlib.util

    from torch_overlay._series import Series

    env, entry = build_overlay(tmp_path)

    class NoSource(importlib.machinery.SourceFileLoader):
        def source_to_code(self, data, path, *, _optimize=-1):
            raise AssertionError(f"{path} compiled from source")

    linked, compiled = [], []
    for top, dirs, names in os.walk(entry / "torch"):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not os.path.islink(os.path.join(top, d))]
        for name in names:
            path = os.path.join(top, name)
            cfile = importlib.util.cache_from_source(path)
            if not name.endswith(".py") or not os.path.exists(cfile):
                continue
            NoSource("overlay_module", path).get_code("overlay_module")
            (linked if os.path.islink(cfile) else compiled).append(path)
    patched = {str(entry / f) for f in Series.load(Path(env["TORCH_OVERLAY_PATCHES"])).patched_files()}
    assert patched and patched <= set(compiled), (patched, compiled)
    assert len(linked) > 100, len(linked)
    # what a link points at is the installed bytecode, never written by the build
    assert all(os.readlink(importlib.util.cache_from_source(p)).startswith(os.path.dirname(os.readlink(p)))
               for p in linked)


# --------------------------------------------------------------------------- smaller things


def test_pr_out_of_range_is_one_short_line():
    proc = run("pr", "99")
    error = assert_one_line_error(proc, "no patch '99'", "status")
    assert len(error) < 300, error


def test_suite_runs_one_file_of_ours():
    proc = run("suite", "--base", "test/dynamo/test_tv_subclass_inplace.py", "--pytest-args", "-q -p no:cacheprovider")
    assert "test_tv_subclass_inplace.py" in proc.stdout
    assert "test_tv_isinstance.py" not in proc.stdout
    missing = run("suite", "--base", "test/dynamo/test_nope.py")
    assert_one_line_error(missing, "test path not found: test/dynamo/test_nope.py", "--checkout")


def _fake_installed_torch(site: Path) -> Path:
    """A site-packages holding a torch of BASE's version with a wheel RECORD
    of its files; returns one of those files."""
    import base64
    import hashlib

    files = {
        "torch/__init__.py": "",
        "torch/version.py": '__version__ = "2.13.0+cpu"\ngit_version = "cf30153c4c131c8164ee7798e5022d810682e2cb"\n',
        "torch/_dynamo/convert_frame.py": "x = 1\n",
    }
    info = site / "torch-2.13.0+cpu.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0+cpu\n")
    record = []
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text)}")
    record.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(record) + "\n")
    return site / "torch/_dynamo/convert_frame.py"


def test_an_installed_torch_changed_since_install_is_refused(tmp_path):
    # The overlay links every file the series does not patch to the installed
    # one: a write into site-packages (a debugging copy written through one of
    # those symlinks) would reach every overlay entry and BASE alike.
    site = tmp_path / "site"
    changed = _fake_installed_torch(site)
    env = {"PYTHONPATH": str(site), "TORCH_OVERLAY_CACHE": str(tmp_path / "cache")}
    status = run("status", env=env)
    assert "differs from its wheel" not in status.stdout, status.stdout

    changed.write_text("x = 2\n")
    for command in ("build", "check"):
        proc = run(command, env=env)
        assert_one_line_error(
            proc,
            "installed torch 2.13.0+cpu",
            "differs from its wheel in 1 Python file(s): torch/_dynamo/convert_frame.py",
            "`pip install --force-reinstall --no-deps torch==2.13.0`",
            "--force",
        )
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    status = run("status", env=env)
    assert status.returncode == 1
    assert "WARNING: installed torch 2.13.0+cpu" in status.stdout
    assert "refused over an installed package changed since it was installed" in status.stdout

    changed.unlink()  # a file gone counts too
    assert_one_line_error(run("build", env=env), "differs from its wheel in 1 Python file(s)")


def test_apply_twice_says_the_series_is_already_there(tmp_path):
    # A minimal base tree: the files the first patch touches, committed as BASE.
    import torch_overlay._git as git
    from torch_overlay._series import Series
    from torch_overlay._torch import find_installed_torch

    patches = first_patches(tmp_path, 1)
    series = Series.load(patches)
    torch = find_installed_torch()
    tree = tmp_path / "tree"
    for f in series.patched_files():
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(torch.root / f, tree / f)
    git.git("init", "-q", "-b", "main", cwd=tree)
    git.git("add", "-A", cwd=tree)
    git.git("commit", "-q", "-m", f"BASE\n\nBase-Tree-Of: {series.base.commit}\n", cwd=tree, env=git.FIXED_IDENTITY)

    env = {"TORCH_OVERLAY_PATCHES": str(patches), **git.FIXED_IDENTITY}
    first = run("apply", str(tree), "--branch", "one", "--no-tests", env=env)
    assert first.returncode == 0, first.stderr
    again = run("apply", str(tree), "--branch", "two", "--no-tests", env=env)
    assert_one_line_error(again, "is already in", "already applied; nothing was changed")
    assert git.out("rev-parse", "--abbrev-ref", "HEAD", cwd=tree) == "one"
    assert "two" not in git.out("branch", "--list", cwd=tree)


def test_pyproject_declares_what_the_suite_imports():
    import tomllib

    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    test_extra = " ".join(meta["optional-dependencies"]["test"])
    for name in ("expecttest", "hypothesis", "pytest", "numpy", "torchvision"):
        assert name in test_extra, name
    for package, declared in (("torch", meta["dependencies"]), ("torchvision", meta["optional-dependencies"]["test"])):
        base = REPO / "patches" / package / "BASE"
        pin = dict(line.split(None, 1) for line in base.read_text().splitlines() if line.strip())[package]
        assert f"{package}=={pin}" in declared, (package, pin, declared)


def test_audit_table_has_a_legend_and_fits_a_terminal(monkeypatch):
    from torch_overlay import audit as audit_mod
    from torch_overlay.overlay import Overlay

    long_reason = "Unsupported: " + "a very long reason " * 20
    base_rows = [
        {"case": "random: flip (flag on)", "verdict": long_reason, "flags": ["hoist_torch_rng_draws"],
         "missing_flags": ["hoist_torch_rng_draws"], "graphs": 2, "breaks": 1, "counted": 1},
        {"case": "tvtensor: F.get_size(Image)", "verdict": "Observed exception: TypeError", "flags": [],
         "missing_flags": [], "graphs": 1, "breaks": 0, "counted": 0},
    ]
    patched_rows = [
        dict(base_rows[0], verdict="ok", missing_flags=[], graphs=1, breaks=0, counted=0),
        dict(base_rows[1], verdict="ok"),
    ]

    def run_worker(module, parts, env, *, capture):
        # Workers run side by side: answer by which torch (base or overlay) and which parts.
        patched = "TORCH_OVERLAY_ROOT" in env
        result = {"note": "", "torch_file": ("/overlay" if patched else "/site") + "/torch/__init__.py"}
        if "model" in parts:
            result["model"] = patched_rows if patched else base_rows
        return result

    monkeypatch.setattr(audit_mod, "run_worker", run_worker)
    lines = []
    fake = Overlay(root=Path("/overlay"), layers=(), built=False)
    assert audit_mod.audit(fake, log=lines.append)
    text = "\n".join(lines)
    assert 'backend="eager", fullgraph=True' in text and "equals eager's" in text
    assert max(len(line) for line in text.splitlines()) <= 160
    table = [line for line in lines if line.startswith("random: flip")]
    assert table == [table[0]] and "[flags]" in table[0] and "(flag on)" not in table[0]
    assert "(no flag) break: Unsupported" in table[0]
    assert "explain: agrees with fullgraph on 3 of 4 runs (2 cases x base and patched); 1 blind spot(s)" in text


def test_stack_reads_both_series_and_pr_takes_a_package():
    from torch_overlay._series import Stack

    stack = Stack.load(REPO / "patches")
    assert [s.package for s in stack.series] == ["torch", "torchvision"]
    series, patch = stack.select("torchvision:1")
    assert series.package == "torchvision" and patch.label.startswith("torchvision/")
    proc = run("pr", "torchvision:1")
    assert proc.returncode == 0, proc.stderr
    assert "of the torch_overlay torchvision series: patches/torchvision/" in proc.stdout
    assert_one_line_error(run("pr", "torchvision:7"), "no patch '7'", "from 1 to")
    assert_one_line_error(run("pr", "vision:1"), "no series 'vision'")


def test_a_series_directory_must_hold_its_own_package(tmp_path):
    root = tmp_path / "patches"
    shutil.copytree(REPO / "patches", root)
    (root / "torchvision" / "BASE").write_text((root / "torch" / "BASE").read_text())
    assert_one_line_error(run("status", env={"TORCH_OVERLAY_PATCHES": str(root)}), "pins torch, but lives in torchvision/")


def test_conformance_tests_must_pass_patched_whatever_the_base_does():
    from torch_overlay.suite import Verdict

    conformance = "test/torchvision/test_compile_functionals.py::test_functional[resize-Image]"
    regression = "test/dynamo/test_tv_mro.py::MroRegressionTests::test_x"
    assert Verdict(conformance, None, "failed", "passed").ok
    assert Verdict(conformance, None, "passed", "passed").ok
    assert not Verdict(conformance, None, "passed", "failed").ok
    assert not Verdict(conformance, None, "failed", "failed").ok
    # a test outside the conformance files still must pass on both
    assert not Verdict(regression, None, "failed", "passed").ok


def test_a_test_belongs_to_the_patch_that_names_it_most_closely():
    from torch_overlay._series import TESTS_TRAILER, Patch
    from torch_overlay.suite import owner

    def patch(name, *tests):
        return Patch(name, Path(name), name, "", tuple((TESTS_TRAILER, t) for t in tests), ())

    cls = "test/dynamo/test_x.py::XTests"
    early, late = patch("early.patch", cls), patch("late.patch", cls + "::test_b")
    assert owner(cls + "::test_a", (early, late)) is early
    assert owner(cls + "::test_b", (early, late)) is late
    assert owner(cls + "::test_b", (late, early)) is late
    assert owner("test/dynamo/test_y.py::YTests::test_a", (early, late)) is None


def test_a_dataloader_workers_error_is_named_by_its_exception_line():
    # Dynamo's errors end with advice, not with what went wrong; the bench's row
    # must show the exception the worker raised.
    from torch_overlay.stream import _worker_error

    wrapped = RuntimeError(
        "Caught InternalTorchDynamoError in DataLoader worker process 0.\n"
        "Original Traceback (most recent call last):\n"
        '  File "t.py", line 3, in f\n'
        "torch._dynamo.exc.InternalTorchDynamoError: PendingUnbackedSymbolNotFound: {u5}\n\n"
        "from user code:\n\n"
        "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace."
    )
    assert _worker_error(wrapped) == "torch._dynamo.exc.InternalTorchDynamoError: PendingUnbackedSymbolNotFound: {u5}"
    unsupported = RuntimeError("Caught Unsupported in worker 1.\ntorch._dynamo.exc.Unsupported: Data-dependent branching\n  Explanation: x")
    assert _worker_error(unsupported) == "torch._dynamo.exc.Unsupported: Data-dependent branching"
    assert _worker_error(RuntimeError("boom")) == "boom"
    assert _worker_error(ValueError()) == "ValueError"


def test_a_stream_that_compiles_at_n_but_not_at_10n_is_a_row():
    # fullgraph may compile the first n images and hit the recompile limit on the
    # 10n after them: the bench prints what it measured and says where it failed.
    from torch_overlay.stream import _row

    r = {"workload": "classification", "n": 40, "eager_us": 440.0, "compiled_us": 550.0, "first_pass_s": 17.0,
         "equal": 40, "at_n": {"graphs": 7, "breaks": 0}, "at_10n_error": "FailOnRecompileLimitHit after 8 graphs"}
    row = _row("series fullgraph", r)
    assert "0.80x" in row and "graphs  7 @40" in row and "eager-equal" in row
    assert "fails @400 (FailOnRecompileLimitHit after 8 graphs)" in row
    r = dict(r, at_10n={"graphs": 9, "breaks": 0})
    del r["at_10n_error"]
    assert "graphs  7 @40 /  9 @400" in _row("series default", r)


def test_the_overlay_directory_matches_itself_as_a_regex():
    # Upstream's munge_exc (common_utils) strips the torch directory from
    # messages with an unescaped re.sub: a '+' in it (2.13.0+cpu) made tests
    # that compare munged messages fail under the overlay only.
    code = ("import os, re, torch; d = os.path.dirname(os.path.dirname(torch.__file__)); "
            "print(os.environ.get('TORCH_OVERLAY_ROOT') is not None, bool(re.fullmatch(d, d)))")
    proc = run("run", "--", sys.executable, "-c", code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-2:] == ["True", "True"], proc.stdout
