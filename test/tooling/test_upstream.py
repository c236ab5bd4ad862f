"""The differential upstream-suite command (``python -m torch_overlay upstream``).

A synthetic directory laid out like pytorch's ``test/`` stands in for upstream:
its tests tell the two sides apart by ``TORCH_OVERLAY_ROOT``, which the overlay
sets in the patched side's environment and the base side's lacks, so they need
no torch and run in a second.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from test_cli import REPO, assert_one_line_error, run  # noqa: F401  (test/tooling is on sys.path)

SYNTHETIC = '''\
import os
from pathlib import Path

PATCHED = "TORCH_OVERLAY_ROOT" in os.environ
STATE = Path(os.environ["SYNTH_STATE"])


def _first_time(name):
    """True the first time any process of this run calls it with NAME."""
    marker = STATE / name
    if marker.exists():
        return False
    marker.touch()
    return True


def test_passes_on_both():
    assert True


def test_regresses():
    assert not PATCHED, "broken by the series"


def test_fixed():
    assert PATCHED, "needs the series"


def test_aborts():
    os.abort()


def test_after_the_abort():
    assert True


def test_flaky_regression():
    # fails in the patched side's full run only: passes alone on both sides
    assert not (PATCHED and _first_time("flaky_regression")), "fails once"


def test_flaky_fix():
    # fails in the base side's full run only: passes alone on both sides
    assert PATCHED or not _first_time("flaky_fix"), "fails once"


def test_skipped_on_both():
    import pytest

    pytest.skip("not here")
'''


def synthetic_checkout(tmp_path: Path, body: str = SYNTHETIC) -> Path:
    root = tmp_path / "upstream"
    (root / "test" / "dynamo").mkdir(parents=True)
    (root / "test" / "dynamo" / "test_synthetic.py").write_text(body)
    (root / "test" / "dynamo" / "helper_not_a_test.py").write_text("X = 1\n")
    (root / "SOURCES").write_text("# gathered for the test\ntest/dynamo/test_synthetic.py 0123456789abcdef0123\n")
    (tmp_path / "state").mkdir()
    return root


def run_upstream(tmp_path, *args):
    # TMPDIR: the directory the command keeps pytest's output in goes under
    # tmp_path, which pytest removes, not into the machine's /tmp
    return run("upstream", *args, env={"SYNTH_STATE": str(tmp_path / "state"), "TMPDIR": str(tmp_path)})


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory):
    """One run of the command over the synthetic file (every test below reads it)."""
    tmp_path = tmp_path_factory.mktemp("upstream")
    root = synthetic_checkout(tmp_path)
    out = tmp_path / "results.json"
    record = tmp_path / "summary.json"
    # --jobs 2: the two sides of each file run at the same time
    proc = run_upstream(tmp_path, "--checkout", str(root), "test/dynamo", "--json", str(out), "--record", str(record),
                        "--jobs", "2")
    return proc, json.loads(out.read_text()) if out.exists() else None, record


def test_exit_status_is_one_on_a_regression(synthetic_run):
    proc, _, _ = synthetic_run
    assert proc.returncode == 1, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    assert "1 regression(s) in 8 tests of 1 file(s)" in proc.stdout, proc.stdout[-3000:]


def test_table_counts_each_column(synthetic_run):
    proc, _, _ = synthetic_run
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| `test/dynamo/test_synthetic.py`")]
    assert rows, proc.stdout[-3000:]
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    # file, commit from SOURCES, collected, pass base, pass patched, regressions, fixed, flaky, crashed, updated
    assert cells == ["`test/dynamo/test_synthetic.py`", "`0123456789ab`", "8", "4", "4", "1", "1", "2", "1", "0"], cells
    assert "| file | upstream commit | collected | pass base | pass patched | base-pass → patched-fail |" in proc.stdout
    # helper modules in test/ are not test files
    assert "helper_not_a_test" not in proc.stdout


def test_regression_is_named_with_its_error(synthetic_run):
    proc, _, _ = synthetic_run
    section = proc.stdout.split("REGRESSIONS", 1)[1].split("\n\n", 1)[0]
    assert "test_synthetic.py::test_regresses (base passed, patched failed; alone passed -> failed)" in section
    assert "broken by the series" in section
    fixed = proc.stdout.split("fixed (fail on BASE", 1)[1].split("\n\n", 1)[0]
    assert "::test_fixed (base failed, patched passed; alone failed -> passed)" in fixed


def test_flaky_changes_are_rerun_alone_and_not_counted(synthetic_run):
    proc, results, _ = synthetic_run
    tests = results["files"]["test/dynamo/test_synthetic.py"]["tests"]
    assert tests["test_flaky_regression"] == {
        "base": "passed", "patched": "failed", "base_alone": "passed", "patched_alone": "passed",
        "message": tests["test_flaky_regression"]["message"], "verdict": "flaky",
    }
    assert "fails once" in tests["test_flaky_regression"]["message"]
    assert tests["test_flaky_fix"]["base"] == "failed" and tests["test_flaky_fix"]["verdict"] == "flaky"
    flaky = proc.stdout.split("flaky: changed in the file but not alone", 1)[1].split("\n\n", 1)[0]
    assert "::test_flaky_regression" in flaky and "::test_flaky_fix" in flaky


def test_a_test_that_aborts_does_not_stop_its_file(synthetic_run):
    proc, results, _ = synthetic_run
    tests = results["files"]["test/dynamo/test_synthetic.py"]["tests"]
    assert tests["test_aborts"]["base"] == tests["test_aborts"]["patched"] == "crashed"
    assert "SIGABRT" in tests["test_aborts"]["message"]
    # the tests after it ran in a new pytest process, on both sides
    assert tests["test_after_the_abort"]["base"] == tests["test_after_the_abort"]["patched"] == "passed"
    assert tests["test_skipped_on_both"]["verdict"] == "same"
    assert "test_aborts crashed (the process died of SIGABRT); restarting pytest" in proc.stdout


def test_json_and_record_carry_the_source_commit(synthetic_run):
    _, results, record = synthetic_run
    entry = results["files"]["test/dynamo/test_synthetic.py"]
    assert entry["commit"] == "0123456789abcdef0123" and results["torch"].startswith("2.13.0")
    summary = json.loads(record.read_text())["files"]["test/dynamo/test_synthetic.py"]
    assert summary["regressions"] == ["test_regresses"] and summary["fixed"] == ["test_fixed"]
    assert summary["counts"] == entry["counts"] and summary["commit"] == "0123456789abcdef0123"


def test_a_change_a_patch_makes_on_purpose_is_not_a_regression(tmp_path):
    # A patch whose header names the synthetic regression in an
    # Updates-upstream-test trailer: its pull request updates that test.
    from torch_overlay._series import Series
    from torch_overlay.upstream import compare, record, recorded_table, SideRun, updated_tests

    from test_cli import first_patches

    patches = first_patches(tmp_path, 1)
    name = (patches / "series").read_text().split()[0]
    text = (patches / name).read_text()
    tests = text.index("\nTests: ")
    (patches / name).write_text(
        text[:tests] + "\nUpdates-upstream-test: test/dynamo/test_synthetic.py::test_regresses" + text[tests:]
    )
    updated = updated_tests(Series.load(patches).patches)
    assert updated == {"test/dynamo/test_synthetic.py::test_regresses": name}

    def side(outcomes):
        return SideRun(outcomes=outcomes, messages={}, seconds=0.0, restarts=0)

    result = compare(
        "test/dynamo/test_synthetic.py", "0123456789abcdef0123",
        side({"test_regresses": "passed", "test_other": "passed"}),
        side({"test_regresses": "failed", "test_other": "failed"}),
        updated,
    )
    for t in result.tests.values():  # both changes hold alone
        t.base_alone, t.patched_alone = t.base, t.patched
    assert result.tests["test_regresses"].verdict == "updated"
    assert result.tests["test_other"].verdict == "regression"
    assert result.counts["regressions"] == 1 and result.counts["updated"] == 1

    class FakeOverlay:
        class torch:
            version, git_version = "2.13.0+cpu", "cf30153c4c13"

        series = Series.load(patches)

    path = tmp_path / "summary.json"
    record([result], FakeOverlay, tmp_path, path)
    assert json.loads(path.read_text())["files"]["test/dynamo/test_synthetic.py"]["updated"] == {
        "test_regresses": name
    }
    lines = recorded_table(path)
    assert f"- `test/dynamo/test_synthetic.py::test_regresses` ({name})" in lines


def test_recorded_table_is_what_pr_cites(tmp_path):
    from torch_overlay.upstream import RESULTS, recorded_table

    counts = {"collected": 3, "pass_base": 2, "pass_patched": 3, "regressions": 0, "fixed": 1, "flaky": 0, "crashed": 0}
    results = tmp_path / "r.json"
    results.write_text(json.dumps({"files": {"test/dynamo/test_a.py": {
        "commit": "abcdef1234567890", "date": "2026-11-26", "torch": "2.13.0+cpu", "patches": 31,
        "counts": counts, "regressions": [], "fixed": ["T::t"],
    }}}))
    lines = recorded_table(results)
    # a summary recorded before the "updated" column counts 0 there
    assert lines[2] == "| `test/dynamo/test_a.py` | `abcdef123456` | 3 | 2 | 3 | 0 | 1 | 0 | 0 | 0 |", lines
    assert lines[-1] == "Measured 2026-11-26 (31 patches over torch 2.13.0+cpu)."
    if (REPO / RESULTS).exists():
        proc = run("pr", "1")
        assert proc.returncode == 0, proc.stderr
        assert "### Upstream's own tests" in proc.stdout
        assert recorded_table(REPO / RESULTS)[0] in proc.stdout


def test_a_hanging_test_is_killed_and_the_file_goes_on(tmp_path):
    root = synthetic_checkout(tmp_path, textwrap.dedent('''\
        import time

        def test_hangs():
            time.sleep(600)

        def test_after():
            pass
    '''))
    proc = run_upstream(tmp_path, "--checkout", str(root), "test/dynamo/test_synthetic.py", "--timeout", "3")
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert "test_hangs timeout (no progress for 3 s; the process was killed)" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.startswith("| `test/dynamo/test_synthetic.py`"))
    assert [c.strip() for c in row.strip("|").split("|")][2:] == ["2", "1", "1", "0", "0", "0", "1", "0"], row


def test_a_module_that_hangs_at_import_is_killed(tmp_path):
    root = synthetic_checkout(tmp_path, "import time\n\ntime.sleep(600)\n\ndef test_x():\n    pass\n")
    proc = run_upstream(tmp_path, "--checkout", str(root), "test/dynamo/test_synthetic.py", "--timeout", "3")
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert "did not collect (base error, patched error): pytest stopped outside a test (no progress for 3 s)" \
        in proc.stdout, proc.stdout[-3000:]


def test_a_module_that_does_not_import_is_reported_not_crashed_on(tmp_path):
    root = synthetic_checkout(tmp_path, "import no_such_module_anywhere\n\ndef test_x():\n    pass\n")
    proc = run_upstream(tmp_path, "--checkout", str(root), "test/dynamo/test_synthetic.py")
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert "did not collect (base error, patched error)" in proc.stdout
    assert "No module named 'no_such_module_anywhere'" in proc.stdout


def test_bad_input_is_one_line(tmp_path):
    assert_one_line_error(run("upstream", "--checkout", str(tmp_path / "nope")), "no such directory")
    assert_one_line_error(run("upstream", "--checkout", str(tmp_path)), "is not laid out like pytorch")
    root = synthetic_checkout(tmp_path)
    assert_one_line_error(run("upstream", "--checkout", str(root), "test/inductor"), "test path not found: test/inductor")
    (root / "test" / "empty").mkdir()
    assert_one_line_error(run("upstream", "--checkout", str(root), "test/empty"), "no test files")
    (root / "SOURCES").write_text("test/dynamo/test_synthetic.py\n")
    env = {"TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    assert_one_line_error(run("upstream", "--checkout", str(root), "test/dynamo", env=env),
                          "SOURCES:1: expected 'PATH COMMIT'")
    assert not any((tmp_path / "tmp").iterdir()), "bad input leaves no output directory behind"


def test_wrong_torch_is_refused(tmp_path):
    patches = tmp_path / "patches"
    shutil.copytree(REPO / "patches", patches)
    base = patches / "torch" / "BASE"
    base.write_text(base.read_text().replace("torch 2.13.0", "torch 2.12.0"))
    root = synthetic_checkout(tmp_path)
    proc = run("upstream", "--patches", str(patches), "--checkout", str(root),
               env={"TORCH_OVERLAY_CACHE": str(tmp_path / "cache")})
    assert_one_line_error(proc, "2.12.0")
    assert not os.path.exists(tmp_path / "state" / "flaky_fix"), "no test may run against the wrong torch"


def test_compat_plugin_adds_only_missing_names(tmp_path):
    # An upstream file that imports helpers 2.13 lacks collects with the plugin
    # the runner loads; a name torch has keeps its own value.
    import subprocess
    import sys

    test = tmp_path / "test_uses_old_and_new_helpers.py"
    test.write_text(textwrap.dedent('''\
        import torch
        from torch.testing._internal import inductor_utils
        from torch.testing._internal.inductor_utils import HAS_CUDA
        from torch._dynamo.test_case import TestCaseWithNestedGraphBreaks

        HAS_CPU = inductor_utils.HAS_CPU

        class T(TestCaseWithNestedGraphBreaks):
            def test_names(self):
                self.assertIs(HAS_CUDA, inductor_utils.HAS_CUDA_AND_TRITON)
                self.assertIs(inductor_utils.HAS_CPU, HAS_CPU)
    '''))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "torch_overlay._upstream_compat", "-p", "no:cacheprovider", str(test)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "torch_overlay upstream compat added:" in proc.stdout
    assert "inductor_utils.HAS_CUDA" in proc.stdout and "HAS_CPU" not in proc.stdout.split("added:")[1].splitlines()[0]
