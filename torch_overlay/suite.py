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

from ._series import REPO_ROOT, Patch, Series
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


def run_pytest(
    paths: list[str], env: dict[str, str], extra: list[str] = (), *, capture: bool = False
) -> tuple[int, dict[str, str], str]:
    """Run pytest in a child process; return (exit code, nodeid -> outcome, captured output)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        # The repo root must be importable for the reporting plugin.
        env = with_repo_on_path(dict(env, TORCH_OVERLAY_REPORT=str(report)))
        cmd = [sys.executable, "-m", "pytest", "-p", "torch_overlay._pytest_report", *paths, *extra]
        proc = subprocess.run(
            cmd, cwd=REPO_ROOT, env=env, text=True,
            stdout=subprocess.PIPE if capture else None, stderr=subprocess.STDOUT if capture else None,
        )
        outcomes = json.loads(report.read_text()) if report.exists() else {}
    return proc.returncode, outcomes, proc.stdout or ""


def owner(nodeid: str, patches: tuple[Patch, ...]) -> Patch | None:
    for p in patches:
        for t in p.tests:
            if nodeid == t or nodeid.startswith(t + "::"):
                return p
    return None


@dataclasses.dataclass
class Verdict:
    nodeid: str
    patch: Patch | None
    base: str
    overlay: str

    @property
    def ok(self) -> bool:
        if self.patch is None:
            return self.base == "passed" and self.overlay == "passed"
        return self.base == "failed" and self.overlay == "passed"

    @property
    def expected(self) -> str:
        return "pass/pass" if self.patch is None else "fail/pass"


def _selected(test: str, paths: list[str]) -> bool:
    file = test.split("::", 1)[0]
    return any(file == p or file.startswith(p.rstrip("/") + "/") for p in paths)


def failing_first(
    series: Series, base: dict[str, str], patched: dict[str, str], paths: list[str]
) -> tuple[list[Verdict], list[str]]:
    verdicts = [
        Verdict(n, owner(n, series.patches), base.get(n, "missing"), patched.get(n, "missing"))
        for n in sorted(set(base) | set(patched))
    ]
    problems = []
    for p in series.patches:
        if not p.tests:
            problems.append(f"{p.name}: its header names no tests (add a 'Tests:' trailer)")
        for t in p.tests:
            if _selected(t, paths) and not any(v.nodeid == t or v.nodeid.startswith(t + "::") for v in verdicts):
                problems.append(f"{p.name}: Tests: {t} matches no collected test")
    return verdicts, problems


def report(series: Series, verdicts: list[Verdict], problems: list[str], out=print) -> bool:
    groups: dict[str, list[Verdict]] = {}
    for v in verdicts:
        groups.setdefault(v.patch.name if v.patch else "(regression tests: no patch)", []).append(v)
    out("")
    out("failing-first check: patch tests must fail on BASE and pass patched; regression tests pass on both")
    for name, vs in groups.items():
        good = sum(v.ok for v in vs)
        out(f"  {name}: {good}/{len(vs)} as expected ({vs[0].expected} on base/patched)")
        for v in vs:
            if not v.ok:
                out(f"    UNEXPECTED {v.nodeid}: base {v.base}, patched {v.overlay} (expected {v.expected})")
    for p in problems:
        out(f"  PROBLEM {p}")
    n_ok = sum(v.ok for v in verdicts)
    n_bad = len(verdicts) - n_ok + len(problems)
    out(f"{n_ok} passed, {n_bad} failed")
    return n_bad == 0 and bool(verdicts)


def verify(series: Series, overlay: Overlay, paths: list[str], pytest_args: list[str], log=print) -> bool:
    log(f"[1/2] running {', '.join(paths)} on BASE (unpatched torch {overlay.torch.version}); "
        "patch-owned tests are expected to fail here ...")
    code, base, output = run_pytest(paths, base_env(), ["-q", "--tb=no", "-p", "no:cacheprovider", *pytest_args], capture=True)
    summary = [line for line in output.splitlines() if line.strip()][-1:] or ["(no output)"]
    log(f"      base run: {summary[0].strip('= ')}")
    if not base:
        log(output)
        raise OverlayError("the base run collected no tests")
    log(f"[2/2] running {', '.join(paths)} with the series applied (overlay {overlay.root}) ...")
    code, patched, _ = run_pytest(paths, child_env(overlay), ["-q", "-p", "no:cacheprovider", *pytest_args])
    verdicts, problems = failing_first(series, base, patched, paths)
    return report(series, verdicts, problems, out=log)
