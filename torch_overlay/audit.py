"""The audit: what compiles with ``fullgraph=True``, on the base and with the series.

Three reports, from child processes (the overlay must be on the path before
``import torch``):

1. **The model** (``test/dynamo/tv_dispatch_model.py`` and ``tv_model_*.py``):
   every case on the base and with the series (torch + vision).  A case is
   ``ok`` when the fullgraph compile succeeds and the output equals eager
   (values, dtype, type) with the global RNG state after the call equal too.
   Independently, the case is run through ``torch._dynamo.explain`` (with
   ``capture_scalar_outputs``, which fullgraph turns on); what it sees must agree
   with the verdict (compiled fullgraph <=> one graph, no break reason, and
   nothing in the ``graph_break`` counter, which explain fills too: explain's own
   break reasons miss a break that comes before a frame's first graph).  Where
   explain sees no break but fullgraph broke, the audit names the case as a
   blind spot of explain; where fullgraph compiled but explain saw a break (or
   raised), it is a contradiction and fails the audit.
2. **torchvision** (:mod:`.tv_audit`): torchvision 0.28's v2 functionals on every
   input kind and its transform classes, on the base (plain torch and
   torchvision), the torch series alone and torch + vision, with the random
   flags off and on, on backend eager, and a representative subset on inductor.
   A cell that compiled to the left of the series and breaks with it is a
   regression and fails the audit.
3. **Model vs torchvision** (:mod:`.mirrors`): each model case against the
   torchvision call it mirrors, under torch + vision; a disagreement that
   ``mirrors.KNOWN_DRIFT`` does not list, or a model case that the mirror tables
   do not classify, fails the audit.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ._series import REPO_ROOT, Stack
from .overlay import Overlay, child_env, ensure
from .suite import base_env, run_worker

MODEL_DIR = REPO_ROOT / "test" / "dynamo"
WRONG = "WRONG RESULT: compiled without a break, output differs from eager"
WRONG_RNG = "WRONG RNG STATE: compiled output equals eager's, the RNG state after the call does not"
EAGER_RAISED = "EAGER RAISED"  # the case itself is broken: its eager call raised
NOT_BUILT = "MIRROR NOT BUILT"

# The random-transform flags the torch series adds; "flags on" turns on both.
RANDOM_FLAGS = {"hoist_torch_rng_draws": True, "data_dependent_branches_as_cond": True}
WIDTH = 160  # no output line is longer


# --------------------------------------------------------------------------- worker side


def _reason(e: BaseException) -> str:
    lines = str(e).splitlines() or [type(e).__name__]
    reason = lines[0].strip()
    for line in lines:
        if "Developer debug context:" in line:
            context = line.split("Developer debug context:", 1)[1].strip()
            reason += ": " + context.removeprefix("raised exception ")
            break
    if not reason.startswith(type(e).__name__) and "Unsupported" not in type(e).__name__:
        reason = f"{type(e).__name__}: {reason}"
    return reason if len(reason) <= 80 else reason[:77] + "..."


def reason_key(e: BaseException) -> str:
    """The break's first line, normalized (:func:`mirrors.normalize_reason`), with the
    exception's type; for an exception Dynamo observed, the observed type too."""
    from .mirrors import normalize_reason

    text = str(e)
    key = normalize_reason(text) or type(e).__name__
    if key.startswith("Observed exception"):
        m = re.search(r"raised exception (\w+)", text)
        key = f"Observed exception: {m.group(1)}" if m else key
    if "Unsupported" not in type(e).__name__ and not key.startswith(type(e).__name__):
        key = f"{type(e).__name__}: {key}"
    return key


def check_case(fn, make_args, *, flags=None, backend="eager", seeds=(None,), close=False) -> dict:
    """Compile ``fn`` with fullgraph=True and call it as eager is called, once per seed.

    Before each pair of calls the argument factory runs (fresh inputs: kernels may
    work in place), then ``torch.manual_seed(seed)`` (``None``: the factory seeds,
    or nothing does), and the compiled call starts from the RNG state the eager
    call started from.  ``ok`` needs equal outputs and an equal RNG state after.
    """
    import torch
    import torch._dynamo

    from .tv_audit import same

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, fullgraph=True)
    try:
        for seed in seeds:
            args = make_args()
            if seed is not None:
                torch.manual_seed(seed)
            state = torch.get_rng_state()
            try:
                expected = fn(*args)
            except Exception as e:  # noqa: BLE001 - the case is broken, not the compiler
                return {"verdict": f"{EAGER_RAISED}: {_reason(e)}"}
            expected_state = torch.get_rng_state()
            args = make_args()
            torch.set_rng_state(state)
            try:
                with torch._dynamo.config.patch(flags or {}):
                    got = compiled(*args)
            except Exception as e:  # noqa: BLE001 - each failure is a cell of the table
                return {"verdict": _reason(e), "key": reason_key(e)}
            if not same(expected, got, close=close):
                return {"verdict": WRONG}
            if not torch.equal(expected_state, torch.get_rng_state()):
                return {"verdict": WRONG_RNG}
        return {"verdict": "ok"}
    finally:
        torch._dynamo.reset()


def model_cases() -> dict:
    """The model's AUDIT_CASES: tv_dispatch_model plus its topic modules (tv_model_*.py),
    each a table name -> (fn, args factory[, Dynamo config])."""
    import importlib

    if str(MODEL_DIR) not in sys.path:
        sys.path.insert(0, str(MODEL_DIR))
    cases = {}
    for path in [MODEL_DIR / "tv_dispatch_model.py", *sorted(MODEL_DIR.glob("tv_model_*.py"))]:
        cases.update(importlib.import_module(path.stem).AUDIT_CASES)
    return cases


def _config(case) -> dict:
    return dict(case[2]) if len(case) > 2 else {}


def run_model(cases: dict) -> list[dict]:
    import torch
    import torch._dynamo
    from torch._dynamo.utils import counters

    rows = []
    for name, (fn, make_args, *_) in cases.items():
        # A case may ask for Dynamo config (a flag a patch adds); where the running
        # torch lacks the flag, the case runs with the defaults and shows why.
        asked = _config(cases[name])
        flags = {k: v for k, v in asked.items() if hasattr(torch._dynamo.config, k)}
        row = {"case": name, **check_case(fn, make_args, flags=flags), "flags": sorted(asked),
               "missing_flags": sorted(set(asked) - set(flags))}
        counters.clear()
        # fullgraph=True traces .item() into the graph (Dynamo turns on
        # capture_scalar_outputs for one-graph frames); explain compiles
        # without fullgraph, so give it the same setting to see the same code.
        try:
            with torch._dynamo.config.patch(capture_scalar_outputs=True, **flags):
                explained = torch._dynamo.explain(fn)(*make_args())
        except Exception as e:  # noqa: BLE001 - explain raises what it cannot break on
            row["explain_error"] = _reason(e)
        else:
            row.update(graphs=explained.graph_count, breaks=len(explained.break_reasons),
                       counted=sum(counters["graph_break"].values()))
        torch._dynamo.reset()
        rows.append(row)
    return rows


def run_mirrors(cases: dict) -> list[dict]:
    """Each mirrored model case's torchvision mirror, compiled as the audit compiles
    the model case (backend eager, the case's own Dynamo config)."""
    import torch

    from . import mirrors

    rows = []
    for name, case in cases.items():
        mirror = mirrors.MIRRORS.get(name)
        if mirror is None:
            continue
        flags = {k: v for k, v in _config(case).items() if hasattr(torch._dynamo.config, k)}
        row = {"case": name, "target": mirror.target}
        try:
            fn, make_args = mirrors.build(mirror, case[1])
        except Exception as e:  # noqa: BLE001 - a mirror that names nothing is drift
            row["verdict"] = f"{NOT_BUILT}: {_reason(e)}"
        else:
            row.update(check_case(fn, make_args, flags=flags))
        rows.append(row)
    return rows


def run_torchvision(mode: str) -> list[dict]:
    """The torchvision table's cells of one column: eager, flags (eager with the
    random flags on) or inductor (the subset, flags on)."""
    import torch

    from .tv_audit import INDUCTOR_SEEDS, cases

    flags = RANDOM_FLAGS if mode in ("flags", "inductor") else {}
    rows = []
    for case in cases():
        if mode == "inductor" and not case.inductor:
            continue
        seeds = (INDUCTOR_SEEDS if mode == "inductor" else case.seeds) if case.random else (None,)
        start = time.monotonic()
        result = check_case(case.fn, case.args, flags=flags, backend="inductor" if mode == "inductor" else "eager",
                            seeds=seeds, close=mode == "inductor")
        rows.append({"case": case.name, "group": case.group, "random": case.random,
                     "inductor": case.inductor, "seconds": round(time.monotonic() - start, 2), **result})
    torch._dynamo.reset()
    return rows


def run(parts: list[str]) -> dict:
    """The worker's whole job: each part is model, mirrors or tv:<eager|flags|inductor>."""
    import torch

    torch.set_num_threads(1)  # the audit runs workers side by side; results do not depend on it
    result = {"torch": torch.__version__, "torch_file": torch.__file__, "torchvision_file": None,
              "note": "", "seconds": {}}
    tv_parts = [p for p in parts if p.startswith("tv:") or p == "mirrors"]
    if tv_parts:
        try:
            from .torchvision_env import import_torchvision

            tv = import_torchvision()
            result["torchvision"] = tv.__version__
            result["torchvision_file"] = tv.__file__
        except Exception as e:  # noqa: BLE001 - any import failure means "not available"
            result["note"] = f"torchvision not importable ({type(e).__name__}: {e})"
            parts = [p for p in parts if p not in tv_parts]
    cases = model_cases() if "model" in parts or "mirrors" in parts else {}
    if cases:
        result["model_cases"] = list(cases)
    for part in parts:
        start = time.monotonic()
        if part == "model":
            result["model"] = run_model(cases)
        elif part == "mirrors":
            result["mirrors"] = run_mirrors(cases)
        elif part.startswith("tv:"):
            result.setdefault("tv", {})[part[3:]] = run_torchvision(part[3:])
        else:
            raise ValueError(f"unknown audit part {part!r}")
        result["seconds"][part] = round(time.monotonic() - start, 1)
    return result


# --------------------------------------------------------------------------- driver side


LEGEND = f"""\
Each case is compiled with torch.compile(fn, backend="eager", fullgraph=True) and called as eager is, from
the same RNG state. A cell says:
  ok          it compiled as one graph, its output equals eager's (values, dtype, type, TVTensor metadata)
              and so does the global RNG state after the call
  WRONG       it compiled, but its output differs from eager's ("WRONG rng": only the RNG state after it)
  break: ...  the first line of the error that stopped the one graph (bN: reason N, listed under the table)
  [explain]   after a cell: torch._dynamo.explain, run on the same case, disagrees with it
Rows marked [flags] ask for Dynamo flags that the series adds (the random-transform flags); BASE
has no such flags and runs those rows with its defaults, marked "(no flag)".
Lines are at most {WIDTH} characters. The audit fails only on a contradiction with explain, a regression (a
torchvision cell ok with fewer patches or the flags off, not with more or on), model/torchvision drift that
mirrors.KNOWN_DRIFT does not list, or a model case mirrors.py does not classify; expected breaks pass."""

TV_LEGEND = """\
torchvision's own v2 code (tv_audit.py): functionals on a pure tensor and on each TVTensor kind, and the
transform classes on a pure tensor and on the mixed sample (Image, BoundingBoxes, Mask, {"label": 3}).
Random rows are called from torch.manual_seed(s) for s in 0, 1, 2 (RandomPhotometricDistort: 0, 1): each
call's output and the RNG state after it must equal eager's. Columns, all fullgraph=True, backend eager unless said:
  base      plain torch + plain torchvision (the random flags do not exist there)
  torch     the torch series alone, plain torchvision; +flags: with hoist_torch_rng_draws and
            data_dependent_branches_as_cond on
  t+v       the torch and the torchvision series (the full overlay); +flags: as above
  inductor  t+v with the flags on, backend inductor, only on the rows marked * (a representative subset;
            seeds 0, 1; ok = values within torch.testing's float tolerances, integers within 1); "." = not run
  eager!    the eager call itself raised: the case is wrong, not the compiler"""

CELL = 60  # characters of a break reason in a model-table cell


def _fit(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."


def _is_compiled(verdict: str) -> bool:
    return verdict == "ok" or verdict.startswith("WRONG")


def model_report(base: dict, patched: dict, log) -> tuple[int, int, list[str]]:
    """The model table; returns (blind spots, contradictions, lines of totals)."""

    def explained(row) -> str:
        if "explain_error" in row:
            return f"raised {row['explain_error']}"
        graphs = "0 graphs: frame skipped" if row["graphs"] == 0 else (
            f"{row['graphs']} graph{'s' * (row['graphs'] != 1)}, {row['breaks']} break{'s' * (row['breaks'] != 1)}"
        )
        return f"{graphs}; graph_break counter {row['counted']}"

    def clean(row) -> bool:
        # explain raising (an internal error it does not turn into a break) is not clean
        return "explain_error" not in row and row["graphs"] == 1 and row["breaks"] == 0 and row["counted"] == 0

    def agrees(row) -> bool:
        # compiled fullgraph (right or wrong) <=> explain sees one graph and no break
        return _is_compiled(row["verdict"]) == clean(row)

    def cell(row, width: int = CELL + 30) -> str:
        v = row["verdict"]
        prefix = "(no flag) " if row.get("missing_flags") else ""
        suffix = "" if agrees(row) else " [explain]"
        text = "ok" if v == "ok" else "WRONG" if v == WRONG else "WRONG rng" if v == WRONG_RNG else (
            "eager!" if v.startswith(EAGER_RAISED) else "break: " + v
        )
        room = min(CELL + 7, width - len(prefix) - len(suffix))  # the reason is cut, the markers are kept
        return prefix + (text if len(text) <= room else text[: room - 3] + "...") + suffix

    def name(row) -> str:
        case = row["case"].replace(" (flag on)", "")
        return case + (" [flags]" if row.get("flags") else "")

    rows = list(zip(base["model"], patched["model"], strict=True))
    name_w = max(len(name(b)) for b, _ in rows)
    cell_w = min(max(len(cell(b)) for b, _ in rows), (WIDTH - name_w - 6) // 2)
    rest = WIDTH - name_w - cell_w - 6
    log(f"{'model case':<{name_w}} | {'base':<{cell_w}} | torch+vision")
    log(f"{'-' * name_w}-+-{'-' * cell_w}-+-{'-' * min(rest, 20)}")
    blind, contradictions = [], []
    for b, p in rows:
        log(_fit(f"{name(b):<{name_w}} | {cell(b, cell_w):<{cell_w}} | {cell(p, rest)}"))
        for side, r in (("base", b), ("patched", p)):
            if not agrees(r):
                # explain saw nothing where fullgraph broke: a blind spot of explain
                # (e.g. an exception observed inside an inlined property). The
                # reverse would mean the audit itself is wrong.
                verdict = r["verdict"] if len(r["verdict"]) <= 80 else r["verdict"][:77] + "..."
                (blind if clean(r) else contradictions).append(
                    f"{name(r)} ({side})\n    fullgraph: {verdict}\n    explain: {explained(r)}"
                )
    n = len(rows)

    def total(side: int) -> str:
        ok = sum(r[side]["verdict"] == "ok" for r in rows)
        wrong = sum(r[side]["verdict"].startswith("WRONG") for r in rows)
        return f"{ok}/{n} ok" + (f" ({wrong} more compile but give wrong results)" if wrong else "")

    totals = [
        f"totals: {n} cases; base {total(0)}, patched {total(1)}",
        f"explain: agrees with fullgraph on {2 * n - len(blind) - len(contradictions)} of {2 * n} runs "
        f"({n} cases x base and patched); {len(blind)} blind spot(s), {len(contradictions)} contradiction(s)",
    ]
    log("")
    for line in totals:
        log(_fit(line))
    for d in blind:
        log(f"blind spot of explain (fullgraph broke where explain saw one graph, no break): {d}")
    for d in contradictions:
        log(f"CONTRADICTION (fullgraph compiled where explain saw a break): {d}")
    return len(blind), len(contradictions), totals


# The torchvision table's columns: (header, side, mode).  A side is one torch
# build: base, torch (the torch series alone) or tv (torch + vision).
TV_COLUMNS = (
    ("base", "base", "eager"),
    ("torch", "torch", "eager"),
    ("+flags", "torch", "flags"),
    ("t+v", "tv", "eager"),
    ("+flags", "tv", "flags"),
    ("inductor", "tv", "inductor"),
)
# Each column by name, as the totals and the regressions say it.
COLUMN_NAMES = {
    "base:eager": "base", "torch:eager": "torch", "torch:flags": "torch +flags",
    "tv:eager": "t+v", "tv:flags": "t+v +flags", "tv:inductor": "t+v inductor",
}
# (left, right) column pairs: a cell ok on the left must stay ok on the right.
REGRESSION_PAIRS = (
    ("base:eager", "torch:eager"),
    ("torch:eager", "tv:eager"),
    ("torch:flags", "tv:flags"),
    ("torch:eager", "torch:flags"),
    ("tv:eager", "tv:flags"),
)


def tv_report(results: dict[str, dict], log) -> tuple[list[str], list[str]]:
    """The torchvision table from the workers' results (side -> result); returns
    (lines of totals, regressions)."""
    columns = []
    for header, label, mode in TV_COLUMNS:
        rows = results.get(label, {}).get("tv", {}).get(mode)
        columns.append((header, {(r["group"], r["case"]): r for r in rows} if rows is not None else None))
    present = [(h, c) for h, c in columns if c is not None]
    by_column = {f"{label}:{mode}": c for (_, label, mode), (_, c) in zip(TV_COLUMNS, columns) if c is not None}
    if not present:
        return [], []
    order: list[tuple[str, str]] = []
    for _, col in present:
        order += [k for k in col if k not in order]
    reasons: list[str] = []

    def cell(row: dict | None) -> str:
        if row is None:
            return "."
        v = row["verdict"]
        if v == "ok":
            return "ok"
        if v == WRONG:
            return "WRONG"
        if v == WRONG_RNG:
            return "WRONG rng"
        if v.startswith(EAGER_RAISED):
            return "eager!"
        key = row.get("key") or v
        if key not in reasons:
            reasons.append(key)
        return f"b{reasons.index(key) + 1}"

    from .tv_audit import GROUPS

    groups = [g for g in GROUPS if any(k[0] == g for k in order)] + sorted({k[0] for k in order} - set(GROUPS))
    name_w = max(len(k[1]) + 2 for k in order)
    cell_w = 9
    log(TV_LEGEND)
    totals, regressions = [], []
    for group in groups:
        keys = [k for k in order if k[0] == group]
        log("")
        log(_fit(f"{group:<{name_w}} | " + " | ".join(f"{h:<{cell_w}}" for h, _ in present).rstrip()))
        log(f"{'-' * name_w}-+-" + "-+-".join("-" * cell_w for _ in present))
        for key in keys:
            cells = [cell(col.get(key)) for _, col in present]
            mark = " *" if any(col.get(key, {}).get("inductor") for _, col in present) else ""
            log(_fit(f"{key[1] + mark:<{name_w}} | " + " | ".join(f"{c:<{cell_w}}" for c in cells).rstrip()))
            # A regression: eager-equal with fewer patches (or the flags off), not so with more (or on).
            for a, b in REGRESSION_PAIRS:
                r1, r2 = (by_column.get(c, {}).get(key) for c in (a, b))
                if r1 and r2 and r1["verdict"] == "ok" and r2["verdict"] != "ok":
                    regressions.append(f"{group}: {key[1]}: ok on {COLUMN_NAMES[a]}, {cell(r2)} on {COLUMN_NAMES[b]}")

        def count(col) -> str:
            rows = [col[k] for k in keys if k in col]
            return f"{sum(r['verdict'] == 'ok' for r in rows)}/{len(rows)}"

        def col(label: str, mode: str):
            return by_column.get(f"{label}:{mode}")

        parts = []
        for label, title in (("base", "base"), ("torch", "torch"), ("tv", "torch+vision")):
            eager, flagged = col(label, "eager"), col(label, "flags")
            if eager is None:
                continue
            parts.append(f"{title} {count(eager)}" + (f" (flags on {count(flagged)})" if flagged is not None else ""))
        inductor = col("tv", "inductor")
        if inductor is not None:
            parts.append(f"inductor {count(inductor)}")
        totals.append(f"{group}: " + ", ".join(parts))
    log("")
    for i, reason in enumerate(reasons, 1):
        log(_fit(f"  b{i:<3} {reason}"))
    # What the audit's time goes to, to keep it within minutes when cases are added.
    cells = sorted(((r.get("seconds", 0.0), f"{r['case']} ({r['group'].split()[-1]}; {COLUMN_NAMES[column]})")
                    for column, c in by_column.items() for r in c.values()), reverse=True)
    if cells and cells[0][0]:
        totals.append("slowest cells: " + ", ".join(f"{what} {s:.0f} s" for s, what in cells[:3]))
    return totals, regressions


def mirror_report(patched: dict, log) -> tuple[bool, list[str]]:
    """The model vs torchvision check; returns (passed, lines of totals)."""
    from . import mirrors

    log("model vs torchvision: each mirrored model case and the torchvision call it mirrors (mirrors.py), both")
    log("compiled fullgraph=True, backend eager, the model case's config, under torch + vision; they agree when")
    log("both compile eager-equal or both break with the same first line (normalized)")
    if "model_cases" not in patched:
        log("completeness and mirror checks not run: the worker did not list the model's cases")
        return True, []
    names = patched["model_cases"]
    missing, unknown, both = mirrors.unclassified(names), mirrors.unknown(names), mirrors.doubly_classified()
    ok = not (missing or unknown or both)
    for case in missing:
        log(_fit(f"UNCLASSIFIED model case (add it to mirrors.MIRRORS or mirrors.NOT_MIRRORED): {case}"))
    for case in unknown:
        log(_fit(f"mirrors.py names a case the model does not have: {case}"))
    for case in both:
        log(_fit(f"mirrors.py both mirrors and marks as unmirrored: {case}"))
    totals = [f"mirrors: {len(names)} model cases, {sum(n in mirrors.MIRRORS for n in names)} mirrored, "
              f"{sum(n in mirrors.NOT_MIRRORED for n in names)} mirror nothing, {len(missing)} unclassified"]
    if "mirrors" not in patched:
        note = patched.get("note") or "no mirror results"
        log(_fit(f"mirror check not run: {note}"))
        log(_fit(totals[0]))
        return ok, totals
    report = mirrors.drift(patched["model"], patched["mirrors"])
    n = len(patched["mirrors"])
    totals[0] += (f"; of {n} mirrored: {len(report.agree)} agree, {len(report.known) + len(report.new)} disagree "
                  f"({len(report.known)} known drift, {len(report.new)} new)")
    for case, text, entry in report.known:
        log(_fit(f"  known drift: {case}"))
        log(_fit(f"      {text}"))
        log(_fit(f"      why: {entry.why}"))
        log(_fit(f"      until: {entry.until}"))
    for case, text in report.new:
        log(_fit(f"  NEW DRIFT (not in mirrors.KNOWN_DRIFT): {case}"))
        log(_fit(f"      {text}"))
    for case in report.stale:
        log(_fit(f"  stale KNOWN_DRIFT entry (they agree now, or the case is gone; remove it): {case}"))
    log("")
    log(_fit(totals[0]))
    return ok and report.ok, totals


def torch_only(overlay: Overlay, force: bool = False) -> Overlay:
    """The overlay with the torch series alone (plain torchvision)."""
    stack = Stack(dir=overlay.series.dir.parent, series=(overlay.series,))
    return ensure(stack, force=force)


def jobs_for(full: Overlay, torch_series: Overlay | None) -> list[tuple[str, dict, list[str]]]:
    """(side, environment, parts) per worker process, longest first.  The model's
    patched column and the mirror check run on the tv side (torch + vision)."""
    jobs = [
        ("tv", child_env(full), ["tv:flags"]),
        ("torch", child_env(torch_series or full), ["tv:eager", "tv:flags"]),
        ("tv", child_env(full), ["tv:eager", "tv:inductor"]),
        ("base", base_env(), ["model", "tv:eager"]),
        ("tv", child_env(full), ["model", "mirrors"]),
    ]
    return jobs if torch_series is not None else [j for j in jobs if j[0] != "torch"]


def merge(parts: list[tuple[str, dict]]) -> dict[str, dict]:
    """The workers' results per side: their torchvision columns, model rows and seconds together."""
    sides: dict[str, dict] = {}
    for side, result in parts:
        merged = sides.setdefault(side, {"tv": {}, "seconds": {}})
        for key, value in result.items():
            if key in ("tv", "seconds"):
                merged[key].update(value)
            elif value or key not in merged:
                merged[key] = value
    for merged in sides.values():
        if not merged["tv"]:
            del merged["tv"]
    return sides


def audit(overlay: Overlay, log=print, *, jobs: int = 2, force: bool = False) -> bool:
    start = time.monotonic()
    has_vision = any(layer.pkg.name == "torchvision" for layer in overlay.layers)
    torch_series = torch_only(overlay, force) if has_vision else None
    work = jobs_for(overlay, torch_series)
    log(f"auditing in {len(work)} worker processes, {jobs} at a time (sides: base, torch series, torch + vision)")

    lock = threading.Lock()

    def one(job):
        side, env, parts = job
        env = dict(env, TORCHINDUCTOR_COMPILE_THREADS="1")
        t0 = time.monotonic()
        result = run_worker("torch_overlay._audit_worker", parts, env, capture=True)
        with lock:
            log(_fit(f"  {side} ({' '.join(parts)}): done in {time.monotonic() - t0:.0f} s"))
        if side != "base":
            want = torch_series if side == "torch" else overlay
            if not result["torch_file"].startswith(str(want.root)):
                raise RuntimeError(f"the {side} run imported {result['torch_file']}, not the overlay")
        return side, result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = merge(list(pool.map(one, work)))
    base, patched = results["base"], results["tv"]
    if has_vision:
        tv_file = results["tv"].get("torchvision_file") or ""
        plain_file = results["torch"].get("torchvision_file") or ""
        if tv_file and not tv_file.startswith(str(overlay.root)):
            raise RuntimeError(f"the torch+vision run imported torchvision from {tv_file}, not the overlay")
        if plain_file.startswith(str(overlay.root)) or (torch_series and plain_file.startswith(str(torch_series.root))):
            raise RuntimeError(f"the torch-series run imported a patched torchvision ({plain_file})")

    log("")
    log(LEGEND)
    log("")
    log("== the model (test/dynamo/tv_*.py) ==")
    log("")
    _, contradictions, model_totals = model_report(base, patched, log)

    log("")
    log("== torchvision ==")
    log("")
    tv_totals, regressions = [], []
    note = base.get("note") or results.get("tv", {}).get("note") or "no torchvision results"
    if "tv" in base:
        tv_totals, regressions = tv_report(results, log)
    else:
        log(_fit(f"note: {note}; only the model was audited"))
    for r in regressions:
        log(_fit(f"REGRESSION: {r}"))

    log("")
    log("== model vs torchvision ==")
    log("")
    mirrors_ok, mirror_totals = mirror_report(patched, log)

    log("")
    log("== totals ==")
    for line in [*model_totals, *(f"torchvision, {t}" for t in tv_totals), *mirror_totals]:
        log(_fit(line))
    spent = ", ".join(f"{side} {sum(r.get('seconds', {}).values()):.0f} s" for side, r in results.items())
    log(_fit(f"time: {time.monotonic() - start:.0f} s wall ({spent} in the workers)"))
    failed = []
    if contradictions:
        failed.append(f"{contradictions} contradiction(s) with explain")
    if regressions:
        failed.append(f"{len(regressions)} regression(s)")
    if not mirrors_ok:
        failed.append("model/torchvision drift or unclassified model cases")
    log("result: " + ("FAILED: " + "; ".join(failed) if failed else "passed (breaks above are expected; none is new)"))
    return not failed
