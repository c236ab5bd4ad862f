"""A pytest plugin that records each test's outcome as JSON.

Loaded with ``-p torch_overlay._pytest_report``; writes to the path in
``TORCH_OVERLAY_REPORT``.  The failing-first check compares two such reports
(base and overlay) test by test.  The JSON is ``{"outcomes": {nodeid:
outcome}, "errors": {nodeid: one line}}``: ``errors`` holds, for each module
that failed to collect, the last line of its error (``ModuleNotFoundError: No
module named 'numpy'``), so a broken environment can be named in one line.
"""

from __future__ import annotations

import json
import os

_outcomes: dict[str, str] = {}
_errors: dict[str, str] = {}


def pytest_runtest_logreport(report):
    # A test is "passed" only if setup, call and teardown all passed; any
    # failure or error wins, and a skip is recorded as such.
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.skipped:
        _outcomes.setdefault(report.nodeid, "skipped")
    elif report.when == "call":
        _outcomes.setdefault(report.nodeid, "passed")


def _last_line(report) -> str:
    text = str(report.longrepr or "").strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # pytest prefixes the exception line with "E   "
    lines = [line[1:].strip() if line.startswith("E ") else line for line in lines]
    return lines[-1] if lines else "collection failed"


def pytest_collectreport(report):
    if report.failed:
        nodeid = report.nodeid or "<collection>"
        _outcomes[nodeid] = "error"
        _errors[nodeid] = _last_line(report)


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("TORCH_OVERLAY_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump({"outcomes": _outcomes, "errors": _errors}, f, indent=1, sort_keys=True)
