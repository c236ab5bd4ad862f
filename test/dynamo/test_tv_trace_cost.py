# Owner(s): ["module: dynamo"]
"""What Dynamo spends on each function a torchvision-style dispatch reads.

A call through a torchvision v2 functional reads about a dozen functions Dynamo has
not seen in that frame: the functional, ``_get_kernel``, the registry's keys and
kernels, the logging helper.  Each one is wrapped by VariableBuilder and looked up in
the trace rules, so a fixed cost per function is paid many times per functional.
These tests pin two such costs away, counted deterministically rather than timed:
wrapping a value builds no classes, and deciding whether to inline a user file runs
a handful of Python frames, not one per MOD_INLINELIST entry.
"""

import builtins
import unittest.mock

import torch
import torch._dynamo
from torch._dynamo import trace_rules
from torch._dynamo.test_case import run_tests, TestCase

from tv_dispatch_model import python_calls


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


if __name__ == "__main__":
    run_tests()
