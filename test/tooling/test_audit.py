"""The audit's own logic: the mirror tables, drift detection and the tables' format.

Plain pytest, fast: the workers' results are fabricated (``run_worker`` is
replaced), except where a test imports the model to read its case names.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from torch_overlay import audit as audit_mod
from torch_overlay import mirrors
from torch_overlay.overlay import Overlay


# --------------------------------------------------------------------------- the mirror tables


def test_every_model_case_is_mirrored_or_marked():
    names = list(audit_mod.model_cases())
    assert names, "the model has no AUDIT_CASES"
    assert mirrors.unclassified(names) == [], (
        "model cases in neither mirrors.MIRRORS nor mirrors.NOT_MIRRORED: say which torchvision callable each "
        "mirrors, or why it mirrors none"
    )
    assert mirrors.unknown(names) == [], "mirrors.py names cases the model does not have"
    assert mirrors.doubly_classified() == []


def test_known_drift_entries_say_why_and_until():
    for case, entry in mirrors.KNOWN_DRIFT.items():
        assert case in mirrors.MIRRORS, f"{case}: drift of a case that mirrors nothing"
        assert entry.expect and len(entry.why) > 20 and len(entry.until) > 20, case


def test_not_mirrored_entries_say_why():
    assert all(len(why) > 20 for why in mirrors.NOT_MIRRORED.values())


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None, reason="torchvision is not installed")
def test_every_mirror_target_exists_in_torchvision():
    import torch  # noqa: F401 - torchvision_env needs torch first

    from torch_overlay.torchvision_env import import_torchvision

    import_torchvision()
    missing = []
    for case, mirror in mirrors.MIRRORS.items():
        for target in mirror.targets():
            try:
                mirrors.resolve(target)
            except (ImportError, AttributeError):
                missing.append(f"{case}: {target}")
    assert missing == []


# --------------------------------------------------------------------------- drift detection


def row(case: str, verdict: str = "ok", key: str | None = None) -> dict:
    r = {"case": case, "verdict": verdict}
    if key is not None:
        r["key"] = key
    return r


def test_normalize_reason_keeps_the_first_line_without_what_varies():
    a = "Could not guard on data-dependent expression zuf0 < 0 (unhinted: zuf0 < 0)\n  Explanation: ..."
    b = "Could not guard on data-dependent expression u12 < 0 (unhinted: u12 < 0)\nother detail"
    assert mirrors.normalize_reason(a) == mirrors.normalize_reason(b)
    c = "KeyError(<function f at 0x7f00aa>) in /x/y/torch/_dynamo/z.py:12"
    d = "KeyError(<function f at 0x7f11bb>) in /a/torch/_dynamo/z.py:99"
    assert mirrors.normalize_reason(c) == mirrors.normalize_reason(d)
    assert mirrors.normalize_reason("Data-dependent branching\n  Explanation") == "Data-dependent branching"


def test_drift_sorts_agreements_known_new_and_stale():
    known = {
        "listed": mirrors.Drift("torchvision breaks: Tensor.tolist()", "why " * 10, "until " * 10),
        "listed, drifted otherwise": mirrors.Drift("torchvision breaks: Tensor.tolist()", "w", "u"),
        "listed, agrees now": mirrors.Drift("torchvision breaks", "w", "u"),
        "listed, gone": mirrors.Drift("torchvision breaks", "w", "u"),
    }
    model = [
        row("both ok"),
        row("same break", "Data-dependent branching: attempted to jump", "Data-dependent branching"),
        row("other break", "Data-dependent branching: x", "Data-dependent branching"),
        row("model breaks"),
        row("wrong vs ok", audit_mod.WRONG),
        row("listed"),
        row("listed, drifted otherwise"),
        row("listed, agrees now"),
        row("mirror raised"),
    ]
    model[3] = row("model breaks", "Unsupported method call: x", "Unsupported method call")
    tv = [
        row("both ok"),
        row("same break", "Data-dependent branching: elsewhere", "Data-dependent branching"),
        row("other break", "UserError: Could not guard", "UserError: Could not guard on ?"),
        row("model breaks"),
        row("wrong vs ok"),
        row("listed", "Tensor.tolist() with non-integer tensor", "Tensor.tolist() with non-integer tensor"),
        row("listed, drifted otherwise", "Data-dependent branching", "Data-dependent branching"),
        row("listed, agrees now"),
        row("mirror raised", f"{audit_mod.EAGER_RAISED}: TypeError: bad args"),
    ]
    report = mirrors.drift(model, tv, known)
    assert report.agree == ["both ok", "same break", "listed, agrees now"]
    assert [c for c, _, _ in report.known] == ["listed"]
    assert "model compiles; torchvision breaks: Tensor.tolist()" in report.known[0][1]
    new = dict(report.new)
    assert list(new) == ["other break", "model breaks", "wrong vs ok", "listed, drifted otherwise", "mirror raised"]
    assert new["other break"] == (
        "both break, differently: model Data-dependent branching / torchvision UserError: Could not guard on ?"
    )
    assert new["model breaks"] == "model breaks: Unsupported method call; torchvision compiles"
    assert "cannot be checked" in new["mirror raised"]
    assert report.stale == ["listed, agrees now", "listed, gone"]
    assert not report.ok
    assert mirrors.drift(model[:2], tv[:2], known).ok


# --------------------------------------------------------------------------- the tables


def model_row(case, verdict="ok", flags=(), missing=(), graphs=1, breaks=0, counted=0, key=None):
    r = {"case": case, "verdict": verdict, "flags": list(flags), "missing_flags": list(missing),
         "graphs": graphs, "breaks": breaks, "counted": counted}
    if key:
        r["key"] = key
    return r


def tv_row(case, group, verdict="ok", key=None, random=False, inductor=False):
    r = {"case": case, "group": group, "verdict": verdict, "random": random, "inductor": inductor}
    if key:
        r["key"] = key
    return r


LONG = "Unsupported: " + "a very long reason " * 20
DISABLE = "Skip calling `torch.compiler.disable()`d function"
MODEL = [
    ("F.horizontal_flip", "horizontal_flip"),
    ("random: flip (flag on)", None),
    ("perspective coefficients (lstsq)", "perspective"),
]


@pytest.fixture
def fake_workers(monkeypatch):
    """Results keyed by (side, parts); the test may replace any of them before calling audit()."""
    from torch_overlay.tv_audit import GROUPS

    flags = ["hoist_torch_rng_draws"]
    base_model = [
        model_row("F.horizontal_flip"),
        model_row("random: flip (flag on)", LONG, flags, flags, graphs=2, breaks=1, counted=1),
        model_row("perspective coefficients (lstsq)", "Dynamic shape operator: aten.linalg_lstsq", graphs=2,
                  breaks=1, counted=1, key="Dynamic shape operator"),
    ]
    patched_model = [model_row("F.horizontal_flip"), model_row("random: flip (flag on)", "ok", flags),
                     model_row("perspective coefficients (lstsq)")]

    def tv(kind, mode):
        g_f, g_t, g_r = GROUPS[0], GROUPS[1], GROUPS[4]
        plain = [tv_row("F.horizontal_flip", g_f, inductor=True), tv_row("F.perspective", g_f,
                 "Tensor.tolist() with non-integer tensor: x", "Tensor.tolist() with non-integer tensor")]
        boxes = {
            "base": tv_row("F.resize(BoundingBoxes)", g_t, "Argument of `as_subclass` ...", "as_subclass"),
            "torch": tv_row("F.resize(BoundingBoxes)", g_t, DISABLE + ": x", DISABLE),
            "tv": tv_row("F.resize(BoundingBoxes)", g_t, inductor=True),
        }[kind]
        flip = tv_row("RandomHorizontalFlip", g_r, "ok" if mode == "flags" else "Data-dependent branching: x",
                      None if mode == "flags" else "Data-dependent branching", random=True)
        rows = [*plain, boxes, flip]
        return [r for r in rows if r["inductor"]] if mode == "inductor" else rows

    def result(side, parts):
        vision = "/tv" if side == "tv" else "/site-packages"
        out = {"torch": "2.13.0", "torch_file": f"/{side}/torch/__init__.py", "torchvision_file":
               f"{vision}/torchvision/__init__.py", "note": "", "seconds": {p: 1.0 for p in parts}}
        if "model" in parts:
            out["model"] = base_model if side == "base" else patched_model
            out["model_cases"] = [name for name, _ in MODEL]
        if "mirrors" in parts:
            out["mirrors"] = [
                {"case": "F.horizontal_flip", "target": "transforms.v2.functional.horizontal_flip", "verdict": "ok"},
                {"case": "perspective coefficients (lstsq)", "target": "x", "verdict":
                 "Tensor.tolist() with non-integer tensor: x", "key": "Tensor.tolist() with non-integer tensor"},
            ]
        for p in parts:
            if p.startswith("tv:"):
                out.setdefault("tv", {})[p[3:]] = tv(side, p[3:])
        return out

    overrides = {}

    def run_worker(module, parts, env, *, capture):
        side = "base" if "TORCH_OVERLAY_ROOT" not in env else (
            "torch" if env["TORCH_OVERLAY_ROOT"] == "/torch" else "tv")
        return overrides.get((side, tuple(parts))) or result(side, parts)

    monkeypatch.setattr(audit_mod, "run_worker", run_worker)
    monkeypatch.setattr(audit_mod, "torch_only", lambda overlay, force=False: Overlay(Path("/torch"), (), False))
    monkeypatch.setattr(mirrors, "MIRRORS", {"F.horizontal_flip": mirrors.Mirror("x"),
                                             "perspective coefficients (lstsq)": mirrors.Mirror("y")})
    monkeypatch.setattr(mirrors, "NOT_MIRRORED", {"random: flip (flag on)": "pure Dynamo semantics, for the test"})
    monkeypatch.setattr(mirrors, "KNOWN_DRIFT", {"perspective coefficients (lstsq)": mirrors.Drift(
        "torchvision breaks: Tensor.tolist()", "torchvision returns a list of floats", "a patch")})
    return overrides, result


class _Layer:
    class pkg:
        name = "torchvision"


FULL = Overlay(root=Path("/tv"), layers=(_Layer(),), built=False)  # a torch + vision overlay


def run_audit(**kw) -> tuple[bool, list[str]]:
    lines: list[str] = []
    ok = audit_mod.audit(FULL, log=lines.append, **kw)
    return ok, "\n".join(lines).splitlines()


def test_tables_fit_a_terminal_and_count_per_group(fake_workers):
    ok, lines = run_audit()
    assert ok, "\n".join(lines)
    text = "\n".join(lines)
    assert max(len(line) for line in lines) <= 160
    # the legends: what ok means, the columns, the inductor subset
    assert 'backend="eager", fullgraph=True' in text and "equals eager's" in text and "RNG state" in text
    assert "the torch series alone" in text and "representative subset" in text
    # the model table: [flags] rows, "(no flag)" on the base, a long reason cut
    flip = [line for line in lines if line.startswith("random: flip")]
    assert len(flip) == 1 and "[flags]" in flip[0] and "(no flag) break: Unsupported" in flip[0]
    # the torchvision table: one row per case, numbered break reasons listed once
    boxes = [line for line in lines if line.startswith("F.resize(BoundingBoxes) *")]
    assert len(boxes) == 1
    cells = [c.strip() for c in boxes[0].split("|")[1:]]
    assert cells[0].startswith("b") and cells[1].startswith("b") and cells[3:] == ["ok", "ok", "ok"]
    assert sum(DISABLE in line for line in lines) == 1
    assert "torchvision, TVTensor functionals: base 0/1, torch 0/1 (flags on 0/1), torch+vision 1/1 (flags on 1/1), " \
           "inductor 1/1" in text
    assert "torchvision, random transforms on a pure tensor: base 0/1, torch 0/1 (flags on 1/1)" in text
    # the mirror check: the listed drift, its why and until
    assert "known drift: perspective coefficients (lstsq)" in text and "why: torchvision returns" in text
    assert "mirrors: 3 model cases, 2 mirrored, 1 mirror nothing, 0 unclassified; of 2 mirrored: 1 agree, " \
           "1 disagree (1 known drift, 0 new)" in text
    assert lines[-1].startswith("result: passed")


def test_new_drift_fails_the_audit(fake_workers):
    overrides, result = fake_workers
    patched = result("tv", ["model", "mirrors"])
    patched["mirrors"][0].update(verdict="Data-dependent branching: x", key="Data-dependent branching")
    overrides[("tv", ("model", "mirrors"))] = patched
    ok, lines = run_audit()
    assert not ok
    text = "\n".join(lines)
    assert "NEW DRIFT (not in mirrors.KNOWN_DRIFT): F.horizontal_flip" in text
    assert "model compiles; torchvision breaks: Data-dependent branching" in text
    assert lines[-1].startswith("result: FAILED") and "drift" in lines[-1]


def test_unclassified_model_case_fails_the_audit(fake_workers):
    overrides, result = fake_workers
    patched = result("tv", ["model", "mirrors"])
    patched["model_cases"].append("a new model case")
    overrides[("tv", ("model", "mirrors"))] = patched
    ok, lines = run_audit()
    assert not ok
    assert "UNCLASSIFIED model case (add it to mirrors.MIRRORS or mirrors.NOT_MIRRORED): a new model case" in lines


def test_a_cell_that_stops_compiling_with_the_series_is_a_regression(fake_workers):
    from torch_overlay.tv_audit import GROUPS

    overrides, result = fake_workers
    torch_side = result("torch", ["tv:eager", "tv:flags"])
    torch_side["tv"]["eager"][0] = tv_row("F.horizontal_flip", GROUPS[0], "Unsupported: x", "Unsupported", inductor=True)
    overrides[("torch", ("tv:eager", "tv:flags"))] = torch_side
    ok, lines = run_audit()
    assert not ok
    assert any(line.startswith("REGRESSION: pure-tensor functionals: F.horizontal_flip: ok on base, b")
               for line in lines), lines
