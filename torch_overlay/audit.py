"""The audit: every case of the torchvision-style model (and torchvision's own v2
functionals, where torchvision imports) compiled with ``fullgraph=True`` on the
base and on the overlay, side by side.

Each side runs in its own process (the overlay must be on the path before
``import torch``).  A case is ``ok`` when the fullgraph compile succeeds and the
output equals eager (values, dtype, type).  Independently, the case is run
through ``torch._dynamo.explain`` (with ``capture_scalar_outputs``, which
fullgraph turns on); what it sees must agree with the verdict
(compiled fullgraph <=> one graph, no break reason, and nothing in the
``graph_break`` counter, which explain fills too: explain's own break reasons
miss a break that comes before a frame's first graph).  Where explain sees no
break but fullgraph broke, the audit names the case as a blind spot of explain;
where fullgraph compiled but explain saw a break (or raised), it fails.  A case
that compiles but differs from eager is reported as a wrong result.
"""

from __future__ import annotations

import sys

from ._series import REPO_ROOT
from .overlay import Overlay, child_env
from .suite import base_env, run_worker

MODEL_DIR = REPO_ROOT / "test" / "dynamo"
WRONG = "WRONG RESULT: compiled without a break, output differs from eager"


# --------------------------------------------------------------------------- worker side


def _torchvision_cases():
    """v2 functionals on pure tensors, when a torchvision build imports here."""
    try:
        from .torchvision_env import import_torchvision

        import_torchvision()
        import torchvision.transforms.v2.functional as F  # type: ignore[import-not-found]
    except Exception as e:  # noqa: BLE001 - any import failure means "not available"
        return {}, f"torchvision not importable ({type(e).__name__}: {e})"
    import torch

    def img(dtype=torch.uint8):
        g = torch.Generator().manual_seed(0)
        if dtype == torch.uint8:
            return torch.randint(0, 256, (3, 32, 40), dtype=dtype, generator=g)
        return torch.rand((3, 32, 40), generator=g)

    cases = {
        "tv F.horizontal_flip": (F.horizontal_flip, lambda: (img(),)),
        "tv F.vertical_flip": (F.vertical_flip, lambda: (img(),)),
        "tv F.resize": (F.resize, lambda: (img(), [16, 20])),
        "tv F.center_crop": (F.center_crop, lambda: (img(), [16, 16])),
        "tv F.pad": (F.pad, lambda: (img(), [2, 3])),
        "tv F.normalize": (F.normalize, lambda: (img(torch.float32), [0.5] * 3, [0.2] * 3)),
        "tv F.to_dtype": (F.to_dtype, lambda: (img(), torch.float32, True)),
        "tv F.adjust_brightness": (F.adjust_brightness, lambda: (img(), 1.3)),
        "tv F.equalize": (F.equalize, lambda: (img(),)),
        "tv F.rotate": (F.rotate, lambda: (img(torch.float32), 30.0)),
        "tv F.affine": (F.affine, lambda: (img(torch.float32), 30.0, [2, 1], 1.1, [5.0, 0.0])),
        "tv F.gaussian_blur": (F.gaussian_blur, lambda: (img(torch.float32), [5, 5])),
    }
    return cases, ""


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


def _same(a, b) -> bool:
    import torch

    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def run_cases() -> dict:
    import importlib

    import torch
    import torch._dynamo
    from torch._dynamo.utils import counters

    sys.path.insert(0, str(MODEL_DIR))
    cases = {}
    # The model: tv_dispatch_model plus its topic modules (tv_model_*.py), each
    # with an AUDIT_CASES table: name -> (fn, args factory[, Dynamo config]).
    for path in [MODEL_DIR / "tv_dispatch_model.py", *sorted(MODEL_DIR.glob("tv_model_*.py"))]:
        cases.update(importlib.import_module(path.stem).AUDIT_CASES)
    tv_cases, tv_note = _torchvision_cases()
    cases.update(tv_cases)
    rows = []
    for name, (fn, make_args, *config) in cases.items():
        # A case may ask for Dynamo config (a flag a patch adds); where the running
        # torch lacks the flag, the case runs with the defaults and shows why.
        asked = dict(config[0]) if config else {}
        flags = {k: v for k, v in asked.items() if hasattr(torch._dynamo.config, k)}
        torch._dynamo.reset()
        expected = fn(*make_args())
        with torch._dynamo.config.patch(flags):
            try:
                got = torch.compile(fn, backend="eager", fullgraph=True)(*make_args())
                verdict = "ok" if _same(got, expected) else WRONG
            except Exception as e:  # noqa: BLE001 - each failure is a row of the table
                verdict = _reason(e)
            torch._dynamo.reset()
            counters.clear()
            # fullgraph=True traces .item() into the graph (Dynamo turns on
            # capture_scalar_outputs for one-graph frames); explain compiles
            # without fullgraph, so give it the same setting to see the same code.
            row = {"case": name, "verdict": verdict, "flags": sorted(asked),
                   "missing_flags": sorted(set(asked) - set(flags))}
            try:
                with torch._dynamo.config.patch(capture_scalar_outputs=True):
                    explained = torch._dynamo.explain(fn)(*make_args())
            except Exception as e:  # noqa: BLE001 - explain raises what it cannot break on
                row["explain_error"] = _reason(e)
            else:
                row.update(graphs=explained.graph_count, breaks=len(explained.break_reasons),
                           counted=sum(counters["graph_break"].values()))
        rows.append(row)
    return {"torch": torch.__version__, "torch_file": torch.__file__, "rows": rows, "note": tv_note}


# --------------------------------------------------------------------------- driver side


LEGEND = """\
Each case is compiled with torch.compile(fn, backend="eager", fullgraph=True), once on BASE
(unpatched torch) and once with the series. A cell says:
  ok          it compiled as one graph and its output equals eager's (values, dtype, type)
  WRONG       it compiled, but its output differs from eager's
  break: ...  the first line of the error that stopped the one graph
  [explain]   after a cell: torch._dynamo.explain, run on the same case, disagrees with it
Rows marked [flags] ask for Dynamo flags that the series adds (the random-transform flags); BASE
has no such flags and runs those rows with its defaults, marked "(no flag)"."""

CELL = 60  # characters of a break reason in a cell


def audit(overlay: Overlay, log=print) -> bool:
    log("auditing on BASE (unpatched) ...")
    base = run_worker("torch_overlay._audit_worker", [], base_env(), capture=True)
    log("auditing with the series applied ...")
    patched = run_worker("torch_overlay._audit_worker", [], child_env(overlay), capture=True)
    if not patched["torch_file"].startswith(str(overlay.root)):
        raise RuntimeError(f"the patched run imported {patched['torch_file']}, not the overlay")

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
        return (row["verdict"] in ("ok", WRONG)) == clean(row)

    def cell(row) -> str:
        v = row["verdict"]
        text = "ok" if v == "ok" else "WRONG" if v == WRONG else "break: " + (
            v if len(v) <= CELL else v[: CELL - 3] + "..."
        )
        if row.get("missing_flags"):
            text = "(no flag) " + text
        return text + ("" if agrees(row) else " [explain]")

    def name(row) -> str:
        case = row["case"].replace(" (flag on)", "")
        return case + (" [flags]" if row.get("flags") else "")

    rows = list(zip(base["rows"], patched["rows"], strict=True))
    widths = [max(len(name(b)) for b, _ in rows), max(len(cell(b)) for b, _ in rows)]
    log("")
    log(LEGEND)
    log("")
    log(f"{'case':<{widths[0]}} | {'base':<{widths[1]}} | patched")
    log(f"{'-' * widths[0]}-+-{'-' * widths[1]}-+-{'-' * 20}")
    blind, contradictions = [], []
    for b, p in rows:
        log(f"{name(b):<{widths[0]}} | {cell(b):<{widths[1]}} | {cell(p)}")
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
        wrong = sum(r[side]["verdict"] == WRONG for r in rows)
        return f"{ok}/{n} ok" + (f" ({wrong} more compile but give wrong results)" if wrong else "")

    log("")
    log(f"totals: {n} cases; base {total(0)}, patched {total(1)}")
    log(
        f"explain: agrees with fullgraph on {2 * n - len(blind) - len(contradictions)} of {2 * n} runs "
        f"({n} cases x base and patched); {len(blind)} blind spot(s), {len(contradictions)} contradiction(s)"
    )
    if base["note"]:
        log(f"note: {base['note']}; only the model was audited")
    for d in blind:
        log(f"blind spot of explain (fullgraph broke where explain saw one graph, no break): {d}")
    for d in contradictions:
        log(f"CONTRADICTION (fullgraph compiled where explain saw a break): {d}")
    return not contradictions
