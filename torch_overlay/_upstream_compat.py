"""A pytest plugin: names that upstream test files import and torch 2.13.0 lacks.

Loaded with ``-p torch_overlay._upstream_compat`` by the upstream-suite runner
(``torch_overlay/upstream.py``), on BASE and patched alike. Upstream's test
files gathered from the stored index are rarely at BASE: a newer one imports a
helper 2.13 does not have yet, an older one a helper it no longer has, and the
whole file then fails to collect on both sides. This plugin adds only names that
are missing (never replaces one), each with the meaning the tests rely on, and
pytest prints what it added after collecting. A checkout at BASE needs none of them.
"""

from __future__ import annotations

_added: list[str] = []


def _add(module, name: str, value) -> None:
    if not hasattr(module, name):
        setattr(module, name, value)
        _added.append(f"{module.__name__}.{name}")


def _identity_decorator(fn=None, *args, **kwargs):
    return fn


_applied = False


def pytest_collect_file(file_path, parent):
    # Before the first test file that uses torch is imported; a run that never
    # imports torch (the tooling's synthetic tests) does not pay for it.
    global _applied
    if not _applied and file_path.suffix == ".py" and "torch" in file_path.read_text(errors="replace"):
        _applied = True
        _add_missing_names()
    return None


def _add_missing_names() -> None:
    import torch._dynamo.exc as exc
    import torch._dynamo.test_case as test_case
    import torch._dynamo.utils as dynamo_utils
    import torch.testing._internal.common_utils as common_utils
    import torch.testing._internal.inductor_utils as inductor_utils

    # Older files: removed from common_utils; it only turned translation
    # validation off for a test, and it is off by default.
    _add(common_utils, "disable_translation_validation_if_dynamic_shapes", _identity_decorator)
    # Older files: renamed HAS_CUDA_AND_TRITON.
    _add(inductor_utils, "HAS_CUDA", getattr(inductor_utils, "HAS_CUDA_AND_TRITON", False))
    # Newer files: a TestCase variant for nested graph breaks; plain TestCase here.
    _add(test_case, "TestCaseWithNestedGraphBreaks", test_case.TestCase)
    # Older files: chose a count by config.dynamic_shapes, which no longer exists;
    # the static-shapes count.
    _add(dynamo_utils, "ifdyn", lambda count1, count2: count2)
    # Older files: an exception class removed from torch._dynamo.exc; only a test
    # that expects it to be raised uses it.
    _add(exc, "IncorrectUsage", type("IncorrectUsage", (Exception,), {}))

    # test/inductor/test_cpu_repro.py (2024): the loop body's interpreter moved
    # from torch._inductor.ir to torch._inductor.loop_body; the same class.
    import torch._inductor.ir as ir
    import torch._inductor.loop_body as loop_body

    _add(ir, "InterpreterShim", loop_body.InterpreterShim)
    # test_cpu_repro.py (2024) also imports two names removed with no equivalent:
    # placeholders that raise when used, so only the tests that use them
    # (test_cpp_vec_*_checker, test_complex_memory_overlap) fail, on both sides.
    import torch._inductor.codegen.cpp as cpp
    import torch._inductor.compile_fx as compile_fx

    _add(cpp, "CppVecKernelChecker",
         type("CppVecKernelChecker", (), {"__init__": _removed("CppVecKernelChecker")}))
    _add(compile_fx, "complex_memory_overlap", _removed("complex_memory_overlap"))
    # Newer files tag a TestCase with `hw_classification = HardwareClassification.X`;
    # upstream's enum only drives CI's device filtering (a pytest plugin this run
    # does not use), so the same members with no behaviour attached.
    import enum

    _add(common_utils, "HardwareClassification", enum.Enum(
        "HardwareClassification",
        [(n, n.lower()) for n in ("GENERIC", "ACCELERATOR", "CPU", "CUDA", "MPS", "XPU")],
    ))


def _removed(name: str):
    def fail(*args, **kwargs):
        raise NotImplementedError(f"{name} does not exist in this torch (upstream-compat placeholder)")

    return fail


def pytest_collection_finish(session) -> None:
    if _added:
        session.config.get_terminal_writer().line("torch_overlay upstream compat added: " + ", ".join(_added))
