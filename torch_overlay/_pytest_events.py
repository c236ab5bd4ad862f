"""A pytest plugin that streams each test's progress as JSON lines, for runs that may die.

Loaded with ``-p torch_overlay._pytest_events`` by the upstream-suite runner
(``torch_overlay/upstream.py``).  Unlike ``_pytest_report``, which writes one
JSON document when the session ends, this appends one line per event and
flushes it, so when a test kills the process (``SIGABRT`` in a generated
kernel) the log still says which tests finished and which one was running.

Environment:

* ``TORCH_OVERLAY_EVENTS``: the file to append events to (required);
* ``TORCH_OVERLAY_DESELECT``: optional file of test ids, one per line, to
  deselect; an id is the part of the pytest node id after the file
  (``Class::test``), so the list does not depend on pytest's rootdir.

Events, one JSON object a line, each with ``"event"``:
``collected`` (``ids``), ``collect_error`` (``id``, ``message``),
``start`` (``id``), ``outcome`` (``id``, ``outcome``, ``message``) once per
finished test, and ``finish`` when the session ends normally.
"""

from __future__ import annotations

import json
import os

from ._pytest_report import _last_line

_phases: dict[str, tuple[str, str]] = {}  # test id -> (outcome so far, message)


def short_id(nodeid: str) -> str:
    """A node id without its file part: ``a/b.py::C::t[x]`` -> ``C::t[x]``."""
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def _error_line(report) -> str:
    """The exception line of a failure (pytest's first ``E`` line), else the report's last line."""
    for line in str(report.longrepr or "").splitlines():
        if line.startswith("E ") and line[1:].strip():
            return line[1:].strip()
    return _last_line(report)


def _emit(**event) -> None:
    with open(os.environ["TORCH_OVERLAY_EVENTS"], "a") as f:
        f.write(json.dumps(event) + "\n")  # closed at once: survives the process dying


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("TORCH_OVERLAY_DESELECT")
    if not path:
        return
    with open(path) as f:
        skip = {line.strip() for line in f if line.strip()}
    deselected = [i for i in items if short_id(i.nodeid) in skip]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [i for i in items if short_id(i.nodeid) not in skip]


def pytest_collection_finish(session):
    _emit(event="collected", ids=[short_id(i.nodeid) for i in session.items])


def pytest_collectreport(report):
    if report.failed:
        _emit(event="collect_error", id=report.nodeid or "<collection>", message=_error_line(report))


def pytest_runtest_logstart(nodeid, location):
    _emit(event="start", id=short_id(nodeid))


def pytest_runtest_logreport(report):
    # A test passes only if setup, call and teardown all pass; a failure in
    # any phase wins, and a skip is kept unless a later phase fails.
    tid = short_id(report.nodeid)
    outcome = _phases.get(tid, ("", ""))[0]
    if report.failed:
        if outcome != "failed":
            _phases[tid] = ("failed", _error_line(report))
    elif report.skipped:
        if not outcome:
            _phases[tid] = ("skipped", _last_line(report))
    elif report.when == "call" and not outcome:
        _phases[tid] = ("passed", "")


def pytest_runtest_logfinish(nodeid, location):
    tid = short_id(nodeid)
    outcome, message = _phases.pop(tid, ("failed", "no report"))
    _emit(event="outcome", id=tid, outcome=outcome, message=message[:500])


def pytest_sessionfinish(session, exitstatus):
    _emit(event="finish", exitstatus=int(exitstatus))
