"""Command line: ``python -m torch_overlay COMMAND``.  See ``--help``."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import textwrap
from pathlib import Path

from . import checkout, overlay
from ._series import PACKAGES, REPO_ROOT, Stack
from ._torch import find_installed
from .errors import OverlayError
from .upstream import RESULTS as UPSTREAM_RESULTS


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _load(args) -> Stack:
    return Stack.load(Path(args.patches).resolve() if args.patches else None)


def _ensure(args) -> overlay.Overlay:
    return overlay.ensure(_load(args), force=args.force, log=_err)


# --------------------------------------------------------------------------- commands


def cmd_status(args) -> int:
    stack = _load(args)
    ok = True
    modified_any = False
    found = []
    for series in stack.series:
        name = series.package
        pkg = find_installed(name, required=name == "torch")
        print(f"{name} series: {len(series.patches)} patch(es) from {series.dir}")
        print(f"           BASE: {name} {series.base.version}, commit {series.base.commit}")
        if pkg is None:
            print(f"      installed: no {name} here; its series is left out of the overlay")
            continue
        print(f"      installed: {name} {pkg.version} (git {pkg.git_version}) at {pkg.package_dir}")
        version_ok = series.base.matches_version(pkg.version)
        if not (version_ok and pkg.git_version == series.base.commit):
            print(f"        WARNING: the installed {name} is not BASE; the overlay refuses it without --force")
        modified = overlay.unmodified_error(pkg, series)
        if modified is not None:
            print(f"        WARNING: {modified}")
            modified_any = True
        results = overlay.dry_run(series, pkg)
        for i, r in enumerate(results, 1):
            state = "applies" if r.applied else f"DOES NOT APPLY: {r.error}"
            print(f"  {i}. {r.patch.name}: {state}")
        ok &= version_ok and all(r.applied for r in results)
        found.append(overlay.Layer(series, pkg))
    entry, _ = overlay.entry_path(found)
    if overlay.is_built(found):
        state = "built"
    elif modified_any:
        state = "refused over an installed package changed since it was installed (`build --force` tries anyway)"
    elif not ok:
        state = "cannot be built until every patch applies to BASE (`build --force` tries anyway)"
    else:
        state = "not built yet; `build` or `run` builds it"
    print(f"overlay: {entry} ({state})")
    return 0 if ok and not modified_any else 1


def cmd_build(args) -> int:
    o = _ensure(args)
    print(o.root)
    return 0


def cmd_run(args) -> int:
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise OverlayError("nothing to run: use `python -m torch_overlay run -- CMD ARGS...`")
    env = overlay.child_env(_ensure(args))
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(cmd[0], cmd, env)  # the exit status is CMD's own
    except FileNotFoundError:
        _err(f"torch_overlay: command not found: {cmd[0]}")
        return 127
    except PermissionError:
        _err(f"torch_overlay: permission denied: {cmd[0]}")
        return 126


def cmd_clean(args) -> int:
    keep = None
    if not args.all:
        keep, _ = overlay.entry_path(overlay.layers(_load(args), args.force))
    removed = overlay.clean(keep)
    for path in removed:
        print(f"removed {path}")
    kept = f"; kept {keep}" if keep is not None and keep.exists() else ""
    print(f"clean: {len(removed)} cache entr{'y' if len(removed) == 1 else 'ies'} removed from {overlay.cache_dir()}{kept}")
    return 0


def cmd_apply(args) -> int:
    series = checkout.series_for(Path(args.checkout), _load(args), args.series)
    checkout.apply(Path(args.checkout), series, args.branch, with_tests=not args.no_tests, log=_err)
    return 0


def cmd_export(args) -> int:
    series = checkout.series_for(Path(args.checkout), _load(args), args.series)
    patches = checkout.export_patches(Path(args.checkout), series)
    dest = Path(args.output).resolve() if args.output else series.dir
    dest.mkdir(parents=True, exist_ok=True)
    if dest != series.dir and not (dest / "BASE").exists():
        (dest / "BASE").write_bytes((series.dir / "BASE").read_bytes())
    checkout.write_patches(patches, dest)
    for name in patches:
        print(dest / name)
    return 0


def cmd_check(args) -> int:
    stack = _load(args)
    drifted = False
    for series in stack.series:
        pkg = find_installed(series.package, required=True)
        overlay.check_version(pkg, series, args.force)
        overlay.check_unmodified(pkg, series, args.force)
        if not series.patches:
            continue
        problems = checkout.check(series, pkg, log=_err)
        for p in problems:
            _err(f"DRIFT: {p}")
        drifted |= bool(problems)
    if drifted:
        _err("the series drifts from its re-export: re-export it (`export`) and commit the result")
        return 1
    print("check: " + "; ".join(
        f"{len(s.patches)} {s.package} patch(es) apply to BASE with zero fuzz and re-export byte for byte"
        for s in stack.series
    ))
    return 0


def cmd_base_tree(args) -> int:
    series = _load(args).get(args.series)
    pkg = find_installed(series.package, required=True)
    overlay.check_version(pkg, series, args.force)
    overlay.check_unmodified(pkg, series, args.force)
    dest = Path(args.dest).resolve()
    if dest.exists() and any(dest.iterdir()):
        raise OverlayError(f"{dest} exists and is not empty")
    checkout.build_base_tree(dest, pkg, series.base.commit)
    print(f"{series.package} base tree for BASE {series.base.commit[:12]} at {dest}; "
          f"next: python -m torch_overlay apply {dest}")
    return 0


def _test_paths(args) -> list[str]:
    """The suite's test paths: each resolved against the cwd, this repo, then --checkout."""
    from .suite import default_test_paths

    if args.checkout and not Path(args.checkout).is_dir():
        raise OverlayError(f"--checkout {args.checkout}: no such directory")
    if not args.paths:
        return default_test_paths()
    roots = [Path.cwd(), REPO_ROOT] + ([Path(args.checkout)] if args.checkout else [])
    paths = []
    for f in args.paths:
        found = next((r / f for r in roots if (r / f).exists()), None)
        if found is None:
            where = ", ".join(str(r) for r in dict.fromkeys(roots))
            hint = "" if args.checkout else " (an upstream file? say where with --checkout PATH)"
            raise OverlayError(f"test path not found: {f} (looked in {where}){hint}")
        paths.append(str(found.resolve()))
    return paths


def cmd_suite(args) -> int:
    from .suite import base_env, run_pytest

    paths = _test_paths(args)
    if args.base:
        env = base_env()
        _err("running against BASE (unpatched torch)")
    else:
        env = overlay.child_env(_ensure(args))
    return run_pytest(paths, env, args.pytest_args).code


def cmd_test(args) -> int:
    from .suite import verify

    from .suite import default_test_paths, run_tooling_tests

    series = _load(args)
    if not args.paths and not args.skip_tooling:
        _err("== the tooling's own tests ==")
        if not run_tooling_tests(log=lambda m: print(m, flush=True)):
            _err("the tooling's own tests failed (output above)")
            return 1
    if not args.skip_check:
        _err("== drift check: apply to a base tree, re-export, compare ==")
        rc = cmd_check(args)
        if rc:
            return rc
    _err("== failing-first suite ==")
    paths = args.paths or default_test_paths()
    ok = verify(series, _ensure(args), paths, args.pytest_args, log=lambda m: print(m, flush=True))
    return 0 if ok else 1


def cmd_upstream(args) -> int:
    import json
    import tempfile

    from .upstream import find_test_files, record, report, run_upstream, to_json, updated_tests

    root = Path(args.checkout).resolve()
    files = find_test_files(root, args.paths or ["test/dynamo"])
    o = _ensure(args)
    workdir = Path(tempfile.mkdtemp(prefix="torch-overlay-upstream-"))
    log = lambda m: print(m, flush=True)  # noqa: E731
    log(f"upstream's tests from {root}: {len(files)} file(s), each on BASE (torch {o.torch.version}) "
        f"and patched ({len(o.series.patches)} patches); pytest's output goes to {workdir}")
    try:
        results = run_upstream(root, files, o, workdir, timeout=args.timeout, jobs=args.jobs,
                               pytest_args=args.pytest_args, updated=updated_tests(o.series.patches), log=log)
    except BaseException:
        # bad input (a SOURCES line) stops the run before pytest writes anything: leave nothing behind
        if not any(workdir.iterdir()):
            workdir.rmdir()
        raise
    ok = report(results, log=log)
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(results, o, root), indent=1, ensure_ascii=False) + "\n")
        log(f"per-test results: {args.json}")
    if args.record:
        record(results, o, root, Path(args.record))
        log(f"summary recorded in {args.record}")
    return 0 if ok else 1


def cmd_pr(args) -> int:
    stack = _load(args)
    series, p = stack.select(args.patch)
    index = series.patches.index(p) + 1
    tests = p.tests
    files = sorted({t.split("::", 1)[0] for t in tests})
    print(p.subject)
    print()
    print(p.description)
    print()
    print("### Test plan")
    print()
    print("The tests fail on the parent commit and pass with this change:")
    print()
    print("```")
    for f in files:
        selected = [t.split("::", 1)[1] for t in tests if "::" in t and t.startswith(f + "::")]
        k = " or ".join(s.split("::")[-1] for s in selected)
        print(f"python -m pytest {f}" + (f" -k {shlex.quote(k)}" if k else ""))
    print("```")
    other = [f"{k}: {v}" for k, v in p.trailers if k != "Tests"]
    if other:
        print()
        for line in other:
            print(line)
    print()
    if series.package == "torch":
        _print_upstream_results()
    rel = p.path.relative_to(stack.dir.parent) if stack.dir.parent in p.path.parents else p.path
    print(f"(patch {index}/{len(series.patches)} of the torch_overlay {series.package} series: {rel})")
    return 0


def _print_upstream_results() -> None:
    """The upstream-suite table of the whole series, from the results file this repo commits."""
    from .upstream import recorded_table

    lines = recorded_table(REPO_ROOT / UPSTREAM_RESULTS)
    if not lines:
        return
    print()
    print("### Upstream's own tests")
    print()
    print("Upstream's test files, run on the parent commit (BASE) and with the whole series; a change counts "
          "only if it holds when the test runs alone:")
    print()
    for line in lines:
        print(line)
    print()
    print("Rerun: `python -m torch_overlay upstream --checkout PYTORCH FILE...` (see the README).")
    print()


def cmd_audit(args) -> int:
    from .audit import audit

    ok = audit(_ensure(args), log=lambda m: print(m, flush=True), jobs=args.jobs, force=args.force)
    return 0 if ok else 1


def _threads(text: str) -> list[int]:
    try:
        return [0 if t == "all" else int(t) for t in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of counts or 'all', got {text!r}") from None


def cmd_bench(args) -> int:
    from .bench import bench
    from .stream import WORKLOADS, bench_streams

    log = lambda m: print(m, flush=True)  # noqa: E731
    o = _ensure(args)
    ok = True
    if args.case or not args.workload:
        ok &= bench(o, args.threads, args.min_run_time, args.case, log=log)
    if args.workload or not args.case:
        workloads = [w for w in WORKLOADS if w in (args.workload or WORKLOADS)]
        ok &= bench_streams(o, workloads, args.images, args.passes, args.dataloader_images, log=log)
    return 0 if ok else 1


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--patches", metavar="DIR", help="the patches directory (default: this repo's patches/, or $TORCH_OVERLAY_PATCHES)")
    common.add_argument("--force", action="store_true", help="try the series even if the installed torch is not BASE (another version, or files changed since it was installed)")

    parser = argparse.ArgumentParser(
        prog="python -m torch_overlay",
        description="Apply the Dynamo/Inductor patch series to an installed torch (no rebuild, "
        "site-packages untouched) or to a pytorch checkout, and test it.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent(
            """\
            examples:
              python -m torch_overlay status
              python -m torch_overlay run -- python my_script.py
              python -m torch_overlay audit
              python -m torch_overlay test
              python -m torch_overlay apply ~/pytorch --branch tv-dispatch
              python -m torch_overlay upstream --checkout ~/pytorch test/dynamo/test_dicts.py
              python -m torch_overlay pr 1
            cache: $TORCH_OVERLAY_CACHE, else $XDG_CACHE_HOME/torch_overlay, else ~/.cache/torch_overlay
            """
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("status", parents=[common], help="installed torch, BASE, and whether each patch applies")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("build", parents=[common], help="build (or reuse) the overlay and print its path")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("run", parents=[common], help="run a command with the patched torch: run -- CMD ARGS...")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("clean", parents=[common], help="remove cache entries other than the current one, and abandoned builds")
    p.add_argument("--all", action="store_true", help="remove the current entry too")
    p.set_defaults(func=cmd_clean)

    p = sub.add_parser("apply", parents=[common], help="git am the series (with its tests) onto a new branch of a pytorch checkout")
    p.add_argument("checkout", help="path to a clean pytorch checkout at BASE or a descendant")
    p.add_argument("--branch", default="torch-overlay", help="the new branch (default: %(default)s)")
    p.add_argument("--series", choices=PACKAGES, help="which series (default: the one whose BASE HEAD contains)")
    p.add_argument("--no-tests", action="store_true", help="apply the code changes only")
    p.set_defaults(func=cmd_apply)

    p = sub.add_parser("export", parents=[common], help="regenerate patches/ from the commits on a checkout's branch")
    p.add_argument("checkout", help="the checkout whose HEAD carries the series")
    p.add_argument("-o", "--output", metavar="DIR", help="write here instead of the series' directory")
    p.add_argument("--series", choices=PACKAGES, help="which series (default: the one whose BASE HEAD contains)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("check", parents=[common], help="apply to a base tree from the wheel with zero fuzz, re-export, compare bytes")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("base-tree", parents=[common], help="make a git repo of the wheel's torch/**/*.py, committed as BASE, to develop patches in")
    p.add_argument("dest", help="a new (or empty) directory")
    p.add_argument("--series", choices=PACKAGES, default="torch", help="whose base tree (default: %(default)s)")
    p.set_defaults(func=cmd_base_tree)

    p = sub.add_parser("suite", parents=[common], help="run test/dynamo (+ upstream files from a checkout) against the patched torch")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="test files or directories: this repo's (e.g. test/dynamo/test_tv_mro.py) or, with "
                   "--checkout, upstream's (e.g. test/dynamo/test_functions.py); default: this repo's suite")
    p.add_argument("--checkout", help="a pytorch checkout to resolve PATHs in that are not this repo's")
    p.add_argument("--base", action="store_true", help="run against the unpatched torch instead")
    p.add_argument("--pytest-args", default=[], type=shlex.split, help="extra pytest arguments, one quoted string")
    p.set_defaults(func=cmd_suite)

    p = sub.add_parser("test", parents=[common], help="CI: the tooling's tests, the drift check, then the suite on BASE and patched, failing-first")
    p.add_argument("paths", nargs="*", help="test files or directories, relative to the repo root "
                   "(default: test/dynamo and test/torchvision, after test/tooling)")
    p.add_argument("--skip-check", action="store_true", help="skip the drift check")
    p.add_argument("--skip-tooling", action="store_true", help="skip the tooling's own tests (test/tooling)")
    p.add_argument("--pytest-args", default=[], type=shlex.split, help="extra pytest arguments, one quoted string")
    p.set_defaults(func=cmd_test)

    p = sub.add_parser(
        "upstream", parents=[common],
        help="run upstream's own test files on BASE and patched, test by test; exit 1 on any base-pass -> patched-fail",
        description=textwrap.fill(
            "Run each upstream test file under pytest on the unpatched torch (BASE) and with the series, "
            "compare test by test, and re-run alone on both sides every test whose outcome changed. Prints "
            "one table row per file; exits 1 on any regression (passes on BASE, fails patched, in the file "
            "and alone). A test that kills pytest (SIGABRT) or hangs is recorded and the rest of its file "
            "runs in a new process.", width=100,
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent(
            """\
            examples:
              nice -n 10 python -m torch_overlay upstream --checkout ~/pytorch test/dynamo/test_dicts.py
              python -m torch_overlay upstream --checkout /tmp/upstream-tests test/dynamo --json out.json
            a gathered directory holds test/... laid out as in pytorch and a SOURCES manifest:
            one 'PATH COMMIT' line per file (the upstream commit it was taken from).
            """
        ),
    )
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="test files or directories under CHECKOUT/test, e.g. test/dynamo/test_dicts.py "
                   "(default: test/dynamo; a directory means its test_*.py files)")
    p.add_argument("--checkout", required=True, metavar="DIR",
                   help="a pytorch checkout, or a directory of gathered upstream tests laid out like one (DIR/test/...)")
    p.add_argument("--json", metavar="FILE", help="write every test's outcomes on both sides to FILE")
    p.add_argument("--record", nargs="?", const=str(REPO_ROOT / UPSTREAM_RESULTS), metavar="FILE",
                   help="merge the per-file summary into FILE (default: results/upstream-suite.json, which `pr` cites)")
    p.add_argument("--timeout", type=float, default=900.0, metavar="S",
                   help="kill a test that runs longer than S seconds and go on with the rest (default: %(default)s)")
    p.add_argument("--jobs", type=int, default=1, help="pytest processes at a time: 2 runs BASE and patched "
                   "side by side (default: %(default)s)")
    p.add_argument("--pytest-args", default=[], type=shlex.split, help="extra pytest arguments, one quoted string")
    p.set_defaults(func=cmd_upstream)

    p = sub.add_parser("pr", parents=[common], help="print the pull-request title and body for patch N (number or file name)")
    p.add_argument("patch", help="N or a file name (torch's series), or PACKAGE:N, e.g. torchvision:1")
    p.set_defaults(func=cmd_pr)

    p = sub.add_parser("bench", parents=[common], help="eager vs inductor, BASE vs patched: per-op medians and ratios, then torchvision transform streams")
    p.add_argument("--threads", type=_threads, default=[1, 0], help="comma list of thread counts, 'all' for every core (default: 1,all)")
    p.add_argument("--min-run-time", type=float, default=1.0, help="seconds of timing per measurement (default: %(default)s)")
    p.add_argument("--case", action="append", default=[], help="only per-op cases whose name contains this (repeatable)")
    p.add_argument("--workload", action="append", default=[], choices=["classification", "detection", "dataloader"],
                   help="only this stream workload of torchvision's transforms (repeatable; default: all, after the per-op table)")
    p.add_argument("--images", type=int, default=40, help="images per stream pass (default: %(default)s; graphs are also counted at 10x)")
    p.add_argument("--passes", type=int, default=3, help="timed passes over the stream (default: %(default)s)")
    p.add_argument("--dataloader-images", type=int, default=1000, help="images in the DataLoader run (default: %(default)s)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("audit", parents=[common], help="compile the model and torchvision fullgraph on BASE and patched, "
                       "and the model against torchvision; print the tables")
    p.add_argument("--jobs", type=int, default=2, help="worker processes at a time (default: %(default)s)")
    p.set_defaults(func=cmd_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except OverlayError as e:
        _err(f"torch_overlay: error: {e}")
        return e.exit_code
    except KeyboardInterrupt:
        _err("torch_overlay: interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
