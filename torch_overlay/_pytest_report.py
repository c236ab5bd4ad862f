"""A pytest plugin that records each test's outcome as JSON.

Loaded with ``-p torch_overlay._pytest_report``; writes to the path in
``TORCH_OVERLAY_REPORT``.  The failing-first check compares two such reports
(base and overlay) test by test.
"""

from __future__ import annotations

import json
import os

_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report):
    # A test is "passed" only if setup, call and teardown all passed; any
    # failure or error wins, and a skip is recorded as such.
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.skipped:
        _outcomes.setdefault(report.nodeid, "skipped")
    elif report.when == "call":
        _outcomes.setdefault(report.nodeid, "passed")


def pytest_collectreport(report):
    if report.failed:
        _outcomes[report.nodeid or "<collection>"] = "error"


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("TORCH_OVERLAY_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(_outcomes, f, indent=1, sort_keys=True)
