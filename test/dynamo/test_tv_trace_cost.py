# Owner(s): ["module: dynamo"]
"""What Dynamo spends on each function a torchvision-style dispatch reads.

A call through a torchvision v2 functional reads about a dozen functions Dynamo has
not seen in that frame: the functional, ``_get_kernel``, the registry's keys and
kernels, the logging helper.  Each one is wrapped by VariableBuilder and looked up in
the trace rules, so a fixed cost per function is paid many times per functional.
These tests pin such costs away, counted deterministically rather than timed:
wrapping a value builds no classes, deciding whether to inline a user file runs a
handful of Python frames, not one per MOD_INLINELIST entry, and a guard installed
again (the registry's key class, hashed at every ``cls in registry``) is kept and
built once.
"""

import builtins
import collections
import functools
import unittest.mock

import torch
import torch._dynamo
from torch._dynamo import trace_rules
from torch._dynamo.guards import GuardBuilder
from torch._dynamo.source import GlobalSource
from torch._dynamo.test_case import run_tests, TestCase
from torch._guards import Guard, GuardsSet

from tv_dispatch_model import make_image, python_calls
from tv_model_kernels import pipeline_functionals


def _adder(k):
    def add(x):
        return x + k

    return add


# Distinct function objects, each wrapped on its own when a compiled frame reads it.
_HELPERS = tuple(_adder(k) for k in range(8))


def _calls_one(x):
    return _HELPERS[0](x)


def _calls_eight(x):
    for helper in _HELPERS:
        x = helper(x)
    return x


def _classes_built_while_compiling(fn, *args) -> int:
    built = 0
    real = builtins.__build_class__

    def counting(*a, **kw):
        nonlocal built
        built += 1
        return real(*a, **kw)

    torch._dynamo.reset()
    with unittest.mock.patch.object(builtins, "__build_class__", counting):
        torch.compile(fn, backend="eager", fullgraph=True)(*args)
    return built


class VariableBuilderTritonObjectsTests(TestCase):
    """Wrapping a value no longer defines stand-in classes for a missing triton."""

    def test_wrapping_more_functions_builds_no_more_classes(self):
        x = torch.ones(3)
        for fn in (_calls_one, _calls_eight):  # first compiles may import lazily
            _classes_built_while_compiling(fn, x)
        one = _classes_built_while_compiling(_calls_one, x)
        eight = _classes_built_while_compiling(_calls_eight, x)
        self.assertEqual(eight, one)


class VariableBuilderRegressionTests(TestCase):
    """Wrapped helpers still trace to the same result."""

    def test_results_unchanged(self):
        x = torch.ones(3)
        torch._dynamo.reset()
        self.assertEqual(torch.compile(_calls_eight, backend="eager", fullgraph=True)(x), _calls_eight(x))


class TraceRulesFileCheckTests(TestCase):
    """check_file on a user file runs a few Python frames, not one per MOD_INLINELIST
    entry and a pathlib round trip."""

    def test_user_file_check_runs_few_python_frames(self):
        trace_rules.check_file(__file__, is_inlined_call=True)  # fill the caches
        frames, result = python_calls(trace_rules.check_file, __file__, True)
        self.assertEqual((result.skipped, result.reason), (False, "inlined by default"))
        self.assertLessEqual(frames, 10)


class TraceRulesFileCheckRegressionTests(TestCase):
    """The decisions themselves are unchanged."""

    def test_inline_allowed_torch_file(self):
        filename = torch.nn.functional.__file__
        self.assertTrue(trace_rules.is_torch_inline_allowed(trace_rules._as_posix_path(filename)))
        inlined = trace_rules.check_file(filename, is_inlined_call=True)
        self.assertFalse(inlined.skipped)
        self.assertIn("MOD_INLINELIST", inlined.reason)
        self.assertTrue(trace_rules.check_file(filename, is_inlined_call=False).skipped)

    def test_skipped_files(self):
        self.assertEqual(trace_rules.check_file(unittest.__file__, True).reason, "file is in unittest directory")
        self.assertTrue(trace_rules.check_file(None).skipped)
        self.assertFalse(trace_rules.is_torch_inline_allowed(__file__))

    def test_posix_path_keeps_trailing_separator(self):
        self.assertEqual(trace_rules._as_posix_path("/a/b/../c/"), "/a/c/")
        self.assertEqual(trace_rules._as_posix_path("/a/./c"), "/a/c")


def _double(x):
    return x * 2


def _negate(x):
    return -x


_REGISTRY = {torch.Tensor: _double, int: _negate}


def _dispatch_by_mro(x):
    # torchvision's _get_kernel: every `cls in registry` hashes the class.
    for cls in type(x).__mro__:
        if cls in _REGISTRY:
            x = _REGISTRY[cls](x)
            break
    if torch.Tensor in _REGISTRY:
        x = x + 1
    return x


def _compile_and_export_guards(fn, *args):
    exported = []
    torch._dynamo.reset()
    compiled = torch._dynamo.optimize(
        "eager", nopython=True, guard_export_fn=lambda guards: exported.append(list(guards))
    )(fn)
    result = compiled(*args)
    (guards,) = exported
    return guards, result


def _repeated_guards(guards):
    # Keyed the way GuardsSet.add means to deduplicate: what is checked, by which builder.
    counts = collections.Counter((g.originating_source, g.create_fn) for g in guards)
    return sorted(f"{g.create_fn_name()} {g.name}" for g in guards if counts[g.originating_source, g.create_fn] > 1)


class GuardsSetDedupTests(TestCase):
    """A guard installed again is not stored or built again."""

    def test_adding_an_equal_guard_again_keeps_one(self):
        guards = GuardsSet()
        guards.add(Guard(GlobalSource("torch"), GuardBuilder.MODULE_MATCH))
        guards.add(Guard(GlobalSource("torch"), GuardBuilder.MODULE_MATCH))
        self.assertEqual(len(guards), 1)

    def test_class_key_hashed_repeatedly_is_guarded_once(self):
        x = torch.ones(3)
        guards, result = _compile_and_export_guards(_dispatch_by_mro, x)
        self.assertEqual(result, _dispatch_by_mro(x))
        self.assertEqual(_repeated_guards(guards), [])

    def test_dispatch_pipeline_installs_each_guard_once(self):
        image = make_image(torch.uint8, (3, 32, 40))
        guards, result = _compile_and_export_guards(pipeline_functionals, image)
        self.assertEqual(result, pipeline_functionals(image))
        self.assertEqual(_repeated_guards(guards), [])


class GuardsSetDedupRegressionTests(TestCase):
    """Guards that check different things stay apart, and a kernel replaced in the
    registry after compiling is still seen."""

    def test_different_checks_stay_apart(self):
        guards = GuardsSet()
        guards.add(Guard(GlobalSource("torch"), GuardBuilder.MODULE_MATCH))
        guards.add(Guard(GlobalSource("torch"), GuardBuilder.ID_MATCH))
        guards.add(Guard(GlobalSource("math"), GuardBuilder.MODULE_MATCH))
        # A partial compares by identity, as it always has.
        guards.add(Guard(GlobalSource("torch"), functools.partial(GuardBuilder.HASATTR, attr="Tensor")))
        guards.add(Guard(GlobalSource("torch"), functools.partial(GuardBuilder.HASATTR, attr="Tensor")))
        self.assertEqual(len(guards), 5)

    def test_kernel_replaced_after_compiling_is_seen(self):
        x = torch.ones(3)
        torch._dynamo.reset()
        compiled = torch.compile(_dispatch_by_mro, backend="eager", fullgraph=True)
        self.assertEqual(compiled(x), _dispatch_by_mro(x))
        try:
            _REGISTRY[torch.Tensor] = _negate
            self.assertEqual(compiled(x), _dispatch_by_mro(x))
            self.assertEqual(compiled(x), torch.full((3,), 0.0))
        finally:
            _REGISTRY[torch.Tensor] = _double


if __name__ == "__main__":
    run_tests()
