"""Running the test suite against the base and the overlay, and the failing-first check.

Every test under ``test/dynamo`` is either *owned* by a patch (named by a
``Tests:`` trailer in the patch header: a file, ``file::Class`` or
``file::Class::test``) or a *regression* test (owned by none).  The rule:

* a patch's tests fail on the unpatched base and pass with the series;
* regression tests pass on both.

A skip counts as neither pass nor fail, so a skipped test breaks the rule.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ._series import REPO_ROOT, Patch, Stack
from .overlay import Overlay, cache_dir, child_env
from .errors import OverlayError



def base_env() -> dict[str, str]:
    """The environment with any overlay removed from PYTHONPATH: imports the installed torch."""
    env = dict(os.environ)
    root = str(cache_dir())
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and not p.startswith(root)]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env.pop("TORCH_OVERLAY_ROOT", None)
    return env


def with_repo_on_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this repo appended to PYTHONPATH, so a child can import torch_overlay."""
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p] + [str(REPO_ROOT)]
    return dict(env, PYTHONPATH=os.pathsep.join(parts))


def run_worker(module: str, args: list[str], env: dict[str, str], *, capture: bool) -> dict:
    """Run ``python -m module OUT.json *args`` and return the JSON it wrote.

    With ``capture`` the child's output is kept and shown only if it fails;
    otherwise it streams (progress lines of long runs).
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        proc = subprocess.run(
            [sys.executable, "-m", module, str(out), *args],
            cwd=REPO_ROOT, env=with_repo_on_path(env), capture_output=capture, text=True,
        )
        if proc.returncode != 0 or not out.exists():
            detail = f":\n{proc.stdout}\n{proc.stderr}" if capture else ""
            raise RuntimeError(f"{module} failed (exit {proc.returncode}){detail}")
        return json.loads(out.read_text())


@dataclasses.dataclass
class PytestRun:
    code: int
    outcomes: dict[str, str]  # nodeid -> passed / failed / skipped / error
    errors: dict[str, str]  # module that failed to collect -> its error's last line
    output: str  # captured output (empty unless capture=True)


def run_pytest(
    paths: list[str], env: dict[str, str], extra: list[str] = (), *, capture: bool = False
) -> PytestRun:
    """Run pytest in a child process and read back each test's outcome."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        # The repo root must be importable for the reporting plugin.
        env = with_repo_on_path(dict(env, TORCH_OVERLAY_REPORT=str(report)))
        cmd = [sys.executable, "-m", "pytest", "-p", "torch_overlay._pytest_report", *paths, *extra]
        proc = subprocess.run(
            cmd, cwd=REPO_ROOT, env=env, text=True,
            stdout=subprocess.PIPE if capture else None, stderr=subprocess.STDOUT if capture else None,
        )
        data = json.loads(report.read_text()) if report.exists() else {}
    return PytestRun(proc.returncode, data.get("outcomes", {}), data.get("errors", {}), proc.stdout or "")


def owner(nodeid: str, patches: tuple[Patch, ...]) -> Patch | None:
    """The patch whose ``Tests:`` trailer names nodeid most closely: a later
    patch naming one test owns it even where an earlier one names its class."""
    best, closest = None, -1
    for p in patches:
        for t in p.tests:
            if (nodeid == t or nodeid.startswith(t + "::")) and len(t) > closest:
                best, closest = p, len(t)
    return best


# Conformance tests check the whole series against the real torchvision, case by
# case: each must pass patched; on the base a case fails (the series fixes it) or
# passes (the series keeps it working).  No single patch owns them.
CONFORMANCE = ("test/torchvision/test_compile_",)


def is_conformance(nodeid: str) -> bool:
    return nodeid.startswith(CONFORMANCE)


@dataclasses.dataclass
class Verdict:
    nodeid: str
    patch: Patch | None
    base: str
    overlay: str

    @property
    def kind(self) -> str:
        """"patch" (owned by a patch's Tests:), "conformance" or "regression"."""
        if self.patch is not None:
            return "patch"
        return "conformance" if is_conformance(self.nodeid) else "regression"

    @property
    def ok(self) -> bool:
        return self.base in _BASE_OUTCOMES[self.kind] and self.overlay == "passed"

    @property
    def expected(self) -> str:
        return _EXPECTED[self.kind]


# What each kind of test must do on the base (it must pass patched).
_BASE_OUTCOMES = {"patch": ("failed",), "regression": ("passed",), "conformance": ("failed", "passed")}
_EXPECTED = {"patch": "fail/pass", "regression": "pass/pass", "conformance": "fail or pass/pass"}
_GROUPS = {"regression": "(regression tests: no patch)", "conformance": "(conformance: the series against torchvision)"}


def _selected(test: str, paths: list[str]) -> bool:
    file = test.split("::", 1)[0]
    return any(file == p or file.startswith(p.rstrip("/") + "/") for p in paths)


def failing_first(
    series: Stack, base: dict[str, str], patched: dict[str, str], paths: list[str]
) -> tuple[list[Verdict], list[str]]:
    verdicts = [
        Verdict(n, owner(n, series.patches), base.get(n, "missing"), patched.get(n, "missing"))
        for n in sorted(set(base) | set(patched))
    ]
    problems = []
    for p in series.patches:
        if not p.tests:
            problems.append(f"{p.label}: its header names no tests (add a 'Tests:' trailer)")
        for t in p.tests:
            if _selected(t, paths) and not any(v.nodeid == t or v.nodeid.startswith(t + "::") for v in verdicts):
                problems.append(f"{p.label}: Tests: {t} matches no collected test")
    return verdicts, problems


def report(series: Stack, verdicts: list[Verdict], problems: list[str], out=print) -> bool:
    groups: dict[str, list[Verdict]] = {}
    for v in verdicts:
        groups.setdefault(v.patch.label if v.patch else _GROUPS[v.kind], []).append(v)
    out("")
    out(
        "failing-first check: patch tests must fail on BASE and pass patched; regression tests pass on both; "
        "conformance tests pass patched"
    )
    for name, vs in groups.items():
        good = sum(v.ok for v in vs)
        fixed = ""
        if vs[0].kind == "conformance":
            fixed = f"; {sum(v.ok and v.base == 'failed' for v in vs)} fixed by the series, the rest pass on both"
        out(f"  {name}: {good}/{len(vs)} as expected ({vs[0].expected} on base/patched{fixed})")
        for v in vs:
            if not v.ok:
                out(f"    UNEXPECTED {v.nodeid}: base {v.base}, patched {v.overlay} (expected {v.expected})")
    for p in problems:
        out(f"  PROBLEM {p}")
    n_ok = sum(v.ok for v in verdicts)
    n_bad = len(verdicts) - n_ok + len(problems)
    out(f"{n_ok} passed, {n_bad} failed")
    return n_bad == 0 and bool(verdicts)


TEST_DIRS = ("test/dynamo", "test/torchvision")
TOOLING_TESTS = "test/tooling"

# What the suite imports besides torch; a fresh environment without the test
# extras lacks some of these (torch's own test helpers import numpy).
_PREFLIGHT = """\
import expecttest, hypothesis, pytest
import torch.testing._internal.common_utils
"""
_PREFLIGHT_TORCHVISION = """\
from torch_overlay.torchvision_env import import_torchvision
import_torchvision()
"""
INSTALL_HINT = "install the test extras: pip install -e '.[test]'"


def default_test_paths() -> list[str]:
    return [d for d in TEST_DIRS if (REPO_ROOT / d).is_dir()]


def _broken(cause: str) -> OverlayError:
    return OverlayError(f"the test environment is broken: {cause} ({INSTALL_HINT})")


def preflight(env: dict[str, str], paths: list[str]) -> None:
    """Import what the suite needs in a child with ``env``; one clear error if that fails."""
    code = _PREFLIGHT
    if any(p.rstrip("/").startswith("test/torchvision") for p in paths):
        code += _PREFLIGHT_TORCHVISION
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=with_repo_on_path(env),
        capture_output=True, text=True,
    )
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        raise _broken(lines[-1].strip() if lines else f"exit {proc.returncode}")


def check_collected(run: PytestRun, side: str) -> None:
    """Stop on modules that failed to collect: the rest of the run would be noise."""
    if run.errors:
        module, error = next(iter(sorted(run.errors.items())))
        more = f" (and {len(run.errors) - 1} more module(s))" if len(run.errors) > 1 else ""
        raise OverlayError(f"the {side} run could not collect {module}: {error}{more}")
    if not run.outcomes:
        raise OverlayError(f"the {side} run collected no tests:\n{run.output.strip()}")


def run_tooling_tests(log=print) -> bool:
    """The tooling's own tests (plain pytest; no failing-first rule)."""
    if not (REPO_ROOT / TOOLING_TESTS).is_dir():
        return True
    log(f"running {TOOLING_TESTS} (the tooling's own tests) ...")
    run = run_pytest([TOOLING_TESTS], base_env(), ["-q", "-p", "no:cacheprovider"], capture=True)
    lines = [line for line in run.output.splitlines() if line.strip()]
    if run.code != 0:
        log(run.output)
        return False
    log(f"      {lines[-1].strip('= ') if lines else 'no output'}")
    return True


def verify(series: Stack, overlay: Overlay, paths: list[str], pytest_args: list[str], log=print) -> bool:
    preflight(base_env(), paths)
    unpatched = " and ".join(f"{l.pkg.name} {l.pkg.version}" for l in overlay.layers)
    log(f"[1/2] running {', '.join(paths)} on BASE (unpatched {unpatched}); "
        "patch-owned tests are expected to fail here ...")
    base = run_pytest(paths, base_env(), ["-q", "--tb=no", "-p", "no:cacheprovider", *pytest_args], capture=True)
    summary = [line for line in base.output.splitlines() if line.strip()][-1:] or ["(no output)"]
    log(f"      base run: {summary[0].strip('= ')}")
    check_collected(base, "base")
    log(f"[2/2] running {', '.join(paths)} with the series applied (overlay {overlay.root}) ...")
    patched = run_pytest(paths, child_env(overlay), ["-q", "-p", "no:cacheprovider", *pytest_args])
    check_collected(patched, "patched")
    verdicts, problems = failing_first(series, base.outcomes, patched.outcomes, paths)
    return report(series, verdicts, problems, out=log)
