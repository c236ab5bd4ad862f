"""Upstream's own tests on BASE and patched: the differential upstream-suite run.

Upstream's CI runs all of ``test/dynamo`` and ``test/inductor`` on every pull
request, so each patch must leave those tests as it found them.  Given a
directory laid out like pytorch's (a checkout, or upstream test files gathered
into ``DIR/test/...`` with a ``DIR/SOURCES`` manifest), this runs each chosen
file under pytest on the unpatched torch (BASE) and with the overlay, compares
outcomes test by test, and re-runs alone, on both sides, every test that
passes on one side only, so that a flaky or order-dependent test does not count:

* base-pass -> patched-fail is a regression when it holds alone too; any is an error,
  unless a patch's header names the test in an ``Updates-upstream-test`` trailer
  (the patch changes that behaviour on purpose and its pull request updates the
  test): then it is reported as updated by that patch, and not counted;
* base-fail -> patched-pass is a fix (evidence for the pull requests);
* a change that does not hold alone is reported as flaky, not counted.

Each (file, side) is one pytest process streaming its events
(``_pytest_events``).  When a test kills the process (``SIGABRT`` in a
generated kernel) or runs past the timeout, it is recorded as ``crashed`` or
``timeout`` and pytest starts again with every test that already has an
outcome deselected, so the rest of the file still runs.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import _git
from .errors import OverlayError
from ._series import UPDATES_TRAILER
from .overlay import Overlay, child_env
from .suite import base_env, with_repo_on_path

PASSED = "passed"
# Outcomes that count as a failure; "skipped" is neither a pass nor a failure.
FAILURES = frozenset({"failed", "crashed", "timeout", "error", "missing"})
COLLECTION = "(collection)"  # the pseudo test that holds a file's collection error
SOURCES = "SOURCES"
RESULTS = Path("results") / "upstream-suite.json"  # the summary committed in this repo
PROGRESS_EVERY = 60.0  # seconds between progress lines of one pytest process
_POLL = 1.0


# --------------------------------------------------------------------------- inputs


def find_test_files(root: Path, paths: list[str]) -> list[str]:
    """The test files PATHS name, relative to ROOT (``test/dynamo/test_dicts.py``).

    ROOT must hold ``test/``.  A PATH is relative to ROOT or to ``ROOT/test``;
    a directory stands for its ``test_*.py`` files (not those of subdirectories).
    """
    if not root.is_dir():
        raise OverlayError(f"{root}: no such directory (give a pytorch checkout or a directory of gathered upstream tests)")
    tests = root / "test"
    if not tests.is_dir():
        raise OverlayError(f"{root} is not laid out like pytorch: no {tests} directory")
    found: list[str] = []
    for p in paths:
        path = next((c for c in (root / p, tests / p) if c.exists()), None)
        if path is None:
            raise OverlayError(f"test path not found: {p} (looked in {root} and {tests})")
        path = path.resolve()
        if tests.resolve() not in path.parents:
            raise OverlayError(f"{p} is not under {tests}")
        files = sorted(path.glob("test_*.py")) if path.is_dir() else [path]
        found += [str(f.relative_to(root.resolve())) for f in files if f.suffix == ".py"]
    if not found:
        raise OverlayError(f"no test files (test_*.py) in {', '.join(paths)} under {root}")
    return list(dict.fromkeys(found))


def read_sources(root: Path) -> dict[str, str]:
    """Which upstream commit each file comes from: ``path -> commit``.

    A git checkout: every file is at HEAD (the key ``*``).  A gathered
    directory: its ``SOURCES`` manifest, one ``path commit`` a line, ``#``
    starting a comment.  Neither: an empty mapping (the report says unknown).
    """
    if (root / ".git").exists():
        return {"*": _git.out("rev-parse", "HEAD", cwd=root)}
    manifest = root / SOURCES
    if not manifest.exists():
        return {}
    sources = {}
    for n, line in enumerate(manifest.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise OverlayError(f"{manifest}:{n}: expected 'PATH COMMIT', got {line!r}")
        sources[parts[0]] = parts[1]
    return sources


def source_of(sources: dict[str, str], path: str) -> str:
    return sources.get(path) or sources.get("*") or "unknown"


# --------------------------------------------------------------------------- one pytest process at a time


@dataclasses.dataclass(frozen=True)
class Side:
    name: str  # "base" or "patched"
    env: dict[str, str]


@dataclasses.dataclass
class SideRun:
    """What one side's pytest processes reported for one file (or a few test ids)."""

    outcomes: dict[str, str] = dataclasses.field(default_factory=dict)  # test id -> outcome
    messages: dict[str, str] = dataclasses.field(default_factory=dict)  # test id -> its error's exception line
    restarts: int = 0
    seconds: float = 0.0


def _died(code: int) -> str:
    if code < 0:
        try:
            return f"the process died of {signal.Signals(-code).name}"
        except ValueError:
            return f"the process died of signal {-code}"
    return f"the process exited with status {code} in the middle of this test"


def _tail(log: Path, lines: int = 5) -> str:
    text = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    return " | ".join(line.strip() for line in text[-lines:]) or "no output"


def run_pytest_file(
    cwd: Path,
    targets: list[str],
    side: Side,
    workdir: Path,
    *,
    label: str,
    timeout: float,
    pytest_args: list[str] = (),
    log=print,
) -> SideRun:
    """Run TARGETS (paths or node ids relative to CWD) under pytest until every test has an outcome.

    A test that kills the process, or sends no event for TIMEOUT seconds, is
    recorded (``crashed`` / ``timeout``) and pytest restarts without the tests
    already done.  ``workdir`` keeps the event log and pytest's output.
    """
    run = SideRun()
    events, deselect, output = workdir / "events.jsonl", workdir / "deselect.txt", workdir / "pytest.log"
    workdir.mkdir(parents=True, exist_ok=True)
    env = with_repo_on_path(dict(
        side.env,
        TORCH_OVERLAY_EVENTS=str(events),
        TORCH_OVERLAY_DESELECT=str(deselect),
        TORCHINDUCTOR_CACHE_DIR=str(workdir.parent / f"inductor-cache-{side.name}"),
    ))
    cmd = [sys.executable, "-m", "pytest", "-p", "torch_overlay._pytest_events",
           "-p", "torch_overlay._upstream_compat", "-p", "no:cacheprovider",
           "-q", "--tb=short", *targets, *pytest_args]
    start = time.monotonic()
    collected: dict[str, None] = {}  # test ids in collection order, over every restart
    while True:
        deselect.write_text("".join(f"{t}\n" for t in run.outcomes))
        events.write_text("")
        with open(output, "a") as out:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        running, finished, position = None, False, 0
        last_event = last_progress = time.monotonic()
        try:
            while True:
                code = proc.poll()
                with open(events, "rb") as f:
                    f.seek(position)
                    chunk = f.read()
                complete = chunk[: chunk.rfind(b"\n") + 1]  # a line being written waits
                position += len(complete)
                for line in complete.decode().splitlines():
                    event = json.loads(line)
                    last_event = time.monotonic()
                    kind = event["event"]
                    if kind == "collected":
                        collected.update(dict.fromkeys(event["ids"]))
                    elif kind == "collect_error":
                        run.outcomes[COLLECTION] = "error"
                        run.messages[COLLECTION] = f"{event['id']}: {event['message']}"
                    elif kind == "start":
                        running = event["id"]
                    elif kind == "outcome":
                        run.outcomes[event["id"]] = event["outcome"]
                        if event["message"]:
                            run.messages[event["id"]] = event["message"]
                        running = None
                    elif kind == "finish":
                        finished = True
                if code is not None:
                    break
                now = time.monotonic()
                if now - last_event > timeout:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    code = None  # killed for the timeout
                    break
                if now - last_progress >= PROGRESS_EVERY:
                    last_progress = now
                    bad = sum(o in FAILURES for o in run.outcomes.values())
                    log(f"    {label}: {len(run.outcomes)}/{len(collected) or '?'} tests done, "
                        f"{bad} not passed, {_minutes(now - start)}")
                time.sleep(_POLL)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if finished:
            break
        if running is None:
            # Stopped outside any test (start-up, collection, a module's teardown):
            # nothing to deselect and retry, so the file gets the error.
            how = f"no progress for {timeout:.0f} s" if code is None else f"exit {code}"
            run.outcomes.setdefault(COLLECTION, "error")
            run.messages.setdefault(COLLECTION, f"pytest stopped outside a test ({how}): {_tail(output)}")
            break
        if code is None:
            run.outcomes[running] = "timeout"
            run.messages[running] = f"no progress for {timeout:.0f} s; the process was killed"
        else:
            run.outcomes[running] = "crashed"
            run.messages[running] = _died(code)
        run.restarts += 1
        left = len([t for t in collected if t not in run.outcomes])
        log(f"    {label}: {running} {run.outcomes[running]} ({run.messages[running]}); "
            f"restarting pytest for the {left} test(s) left")
        if not left:
            break
    for t in collected:
        run.outcomes.setdefault(t, "missing")
    run.seconds = time.monotonic() - start
    return run


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


# --------------------------------------------------------------------------- comparing


def _change(base: str, patched: str) -> str | None:
    if base == PASSED and patched != PASSED:
        return "regression"
    if base in FAILURES and patched == PASSED:
        return "fixed"
    return None


@dataclasses.dataclass
class TestResult:
    id: str
    base: str
    patched: str
    base_alone: str | None = None  # outcome when re-run alone; only for tests whose outcome changed
    patched_alone: str | None = None
    message: str = ""  # the failing side's error
    updated_by: str | None = None  # the patch whose Updates-upstream-test trailer names the test

    @property
    def change(self) -> str | None:
        """``regression`` or ``fixed`` if the full runs differ that way."""
        return _change(self.base, self.patched)

    @property
    def verdict(self) -> str:
        """``same``, ``regression``, ``updated`` (a regression a patch says its pull request
        updates the test for), ``fixed``, or ``flaky`` (changed in the full run, not alone)."""
        change = self.change
        if change is None:
            return "same"
        if self.base_alone is not None and _change(self.base_alone, self.patched_alone) != change:
            return "flaky"
        return "updated" if change == "regression" and self.updated_by else change


@dataclasses.dataclass
class FileResult:
    path: str  # relative to the checkout: test/dynamo/test_dicts.py
    commit: str
    tests: dict[str, TestResult]
    seconds: float = 0.0
    restarts: int = 0

    def ids(self, verdict: str) -> list[str]:
        return [t for t, r in self.tests.items() if r.verdict == verdict]

    @property
    def counts(self) -> dict[str, int]:
        tests = [r for r in self.tests.values() if r.id != COLLECTION]
        return {
            "collected": len(tests),
            "pass_base": sum(r.base == PASSED for r in tests),
            "pass_patched": sum(r.patched == PASSED for r in tests),
            "regressions": len(self.ids("regression")),
            "fixed": len(self.ids("fixed")),
            "updated": len(self.ids("updated")),
            "flaky": len(self.ids("flaky")),
            "crashed": sum(r.base in ("crashed", "timeout") or r.patched in ("crashed", "timeout") for r in tests),
        }


def updated_tests(patches) -> dict[str, str]:
    """``path::test id`` -> the label of the patch whose header says it updates that upstream test."""
    return {value.split()[0]: p.label for p in patches for value in p.trailer(UPDATES_TRAILER)}


def compare(
    path: str, commit: str, base: SideRun, patched: SideRun, updated: dict[str, str] | None = None
) -> FileResult:
    """Pair the two sides' outcomes; a test one side lacks is ``missing`` there."""
    tests = {}
    for t in list(dict.fromkeys([*base.outcomes, *patched.outcomes])):
        b, p = base.outcomes.get(t, "missing"), patched.outcomes.get(t, "missing")
        failing = patched if p != PASSED else base
        message = failing.messages.get(t) or failing.messages.get(COLLECTION, "")
        tests[t] = TestResult(t, b, p, message=message, updated_by=(updated or {}).get(f"{path}::{t}"))
    return FileResult(path, commit, tests, base.seconds + patched.seconds, base.restarts + patched.restarts)


# --------------------------------------------------------------------------- the run


def run_upstream(
    root: Path,
    files: list[str],
    overlay: Overlay,
    workdir: Path,
    *,
    timeout: float = 900.0,
    jobs: int = 1,
    pytest_args: list[str] = (),
    updated: dict[str, str] | None = None,
    log=print,
) -> list[FileResult]:
    """Run FILES (relative to ROOT) on both sides, then re-run changed tests alone on both.

    ``updated`` (see ``updated_tests``) names the upstream tests a patch changes on purpose."""
    sources = read_sources(root)
    sides = (Side("base", base_env()), Side("patched", child_env(overlay)))

    def side_run(side: Side, path: str, ids: list[str] = (), tag: str = "") -> SideRun:
        target = str(Path(path).relative_to("test"))
        label = f"{side.name} {Path(path).stem}{tag}"
        run = run_pytest_file(
            root / "test", [f"{target}::{t}" for t in ids] or [target], side,
            workdir / f"{Path(path).stem}{tag}" / side.name,
            label=label, timeout=timeout, pytest_args=pytest_args, log=log,
        )
        if not ids:
            passed = sum(o == PASSED for o in run.outcomes.values())
            log(f"      {label}: {len(run.outcomes)} tests, {passed} passed ({_minutes(run.seconds)})")
        return run

    results = []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for n, path in enumerate(files, 1):
            log(f"[{n}/{len(files)}] {path} (upstream {source_of(sources, path)[:12]})")
            base, patched = pool.map(lambda s: side_run(s, path), sides)
            result = compare(path, source_of(sources, path), base, patched, updated)
            changed = [t for t, r in result.tests.items() if r.change and t != COLLECTION]
            if changed:
                log(f"      re-running alone, on both sides, the {len(changed)} test(s) whose outcome changed ...")
            for i, t in enumerate(changed):
                alone = list(pool.map(lambda s: side_run(s, path, [t], f"-alone-{i}"), sides))
                r = result.tests[t]
                r.base_alone = alone[0].outcomes.get(t, "missing")
                r.patched_alone = alone[1].outcomes.get(t, "missing")
                log(f"        {t}: {r.base} -> {r.patched} in the file, "
                    f"{r.base_alone} -> {r.patched_alone} alone: {r.verdict}")
            results.append(result)
    return results


# --------------------------------------------------------------------------- reporting

_COLUMNS = ("collected", "pass_base", "pass_patched", "regressions", "fixed", "flaky", "crashed", "updated")
_HEADER = ("file", "upstream commit", "collected", "pass base", "pass patched",
           "base-pass → patched-fail", "base-fail → patched-pass", "flaky (not counted)", "crashed / timeout",
           "updated by a patch (not counted)")


def table(rows: list[tuple[str, str, dict[str, int]]]) -> list[str]:
    """A Markdown table, one row per (file, commit, counts) and a total row."""
    lines = ["| " + " | ".join(_HEADER) + " |", "|" + "---|" * len(_HEADER)]
    for path, commit, counts in rows:
        lines.append(f"| `{path}` | `{commit[:12]}` | " + " | ".join(str(counts.get(k, 0)) for k in _COLUMNS) + " |")
    if len(rows) > 1:
        total = {k: sum(c.get(k, 0) for _, _, c in rows) for k in _COLUMNS}
        lines.append(f"| **{len(rows)} files** | | " + " | ".join(f"**{total[k]}**" for k in _COLUMNS) + " |")
    return lines


def report(results: list[FileResult], log=print) -> bool:
    """Print the table and every counted or flaky change; True when nothing regressed."""
    log("")
    log("upstream's tests, BASE vs patched (a change counts only if it holds when the test runs alone):")
    log("")
    for line in table([(r.path, r.commit, r.counts) for r in results]):
        log(line)
    sections = (
        ("regression", "REGRESSIONS (pass on BASE, fail patched, in the file and alone)"),
        ("updated", "changed on purpose (pass on BASE, fail patched; the patch's pull request updates the test)"),
        ("fixed", "fixed (fail on BASE, pass patched, in the file and alone)"),
        ("flaky", "flaky: changed in the file but not alone (not counted)"),
    )
    for verdict, title in sections:
        found = [(r.path, r.tests[t]) for r in results for t in r.ids(verdict)]
        if found:
            log("")
            log(f"{title}:")
            for path, t in found:
                alone = f"; alone {t.base_alone} -> {t.patched_alone}" if t.base_alone else ""
                by = f"; updated by {t.updated_by}" if verdict == "updated" else ""
                why = f": {t.message}" if t.message and verdict != "fixed" else ""
                log(f"  {path}::{t.id} (base {t.base}, patched {t.patched}{alone}{by}){why}")
    crashed = [(r.path, t) for r in results for t in r.tests.values()
               if "crashed" in (t.base, t.patched) or "timeout" in (t.base, t.patched)]
    if crashed:
        log("")
        log("killed the pytest process (the rest of the file ran in a new one):")
        for path, t in crashed:
            log(f"  {path}::{t.id} (base {t.base}, patched {t.patched}): {t.message}")
    errors = [(r.path, t) for r in results for t in r.tests.values() if t.id == COLLECTION]
    if errors:
        log("")
    for path, t in errors:
        log(f"  {path}: did not collect (base {t.base}, patched {t.patched}): {t.message}")
    regressions = sum(r.counts["regressions"] for r in results)
    log("")
    log(f"{regressions} regression(s) in {sum(r.counts['collected'] for r in results)} tests of {len(results)} file(s)")
    return regressions == 0


def _meta(overlay: Overlay, root: Path) -> dict:
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "torch": overlay.torch.version,
        "torch_commit": overlay.torch.git_version,
        "patches": len(overlay.series.patches),
        "tests_from": str(root),
    }


def to_json(results: list[FileResult], overlay: Overlay, root: Path) -> dict:
    """Every test's outcomes, for ``--json``."""
    return {
        **_meta(overlay, root),
        "files": {
            r.path: {
                "commit": r.commit,
                "counts": r.counts,
                "tests": {
                    t.id: {k: v for k, v in dataclasses.asdict(t).items() if k != "id" and v not in (None, "")}
                    | {"verdict": t.verdict}
                    for t in r.tests.values()
                },
            }
            for r in results
        },
    }


def record(results: list[FileResult], overlay: Overlay, root: Path, path: Path) -> None:
    """Merge this run's per-file summary into PATH (the results file ``pr`` cites)."""
    data = json.loads(path.read_text()) if path.exists() else {"files": {}}
    meta = _meta(overlay, root)
    for r in results:
        data["files"][r.path] = {
            "commit": r.commit,
            "date": meta["date"],
            "torch": meta["torch"],
            "patches": meta["patches"],
            "counts": r.counts,
            "regressions": r.ids("regression"),
            "fixed": r.ids("fixed"),
            "updated": {t: r.tests[t].updated_by for t in r.ids("updated")},
        }
    data["files"] = dict(sorted(data["files"].items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def recorded_table(path: Path) -> list[str]:
    """The results file as Markdown: the table, then the date and commits. Empty if there is none."""
    if not path.exists():
        return []
    files = json.loads(path.read_text())["files"]
    if not files:
        return []
    lines = table([(p, f["commit"], f["counts"]) for p, f in files.items()])
    dates = sorted({f["date"] for f in files.values()})
    series = sorted({f"{f['patches']} patches over torch {f['torch']}" for f in files.values()})
    lines += ["", f"Measured {', '.join(dates)} ({'; '.join(series)})."]
    updated = [(f"{p}::{t}", by) for p, f in files.items() for t, by in f.get("updated", {}).items()]
    if updated:
        lines += ["", "Changed on purpose (pass on BASE, fail patched; the patch's pull request updates the test):"]
        lines += [f"- `{test}` ({by})" for test, by in updated]
    return lines
