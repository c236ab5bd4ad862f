# Owner(s): ["module: dynamo"]
"""The fixed cost of calling compiled code: the "Pregraph bytecode" profiler marker.

A compiled torchvision kernel such as a uint8 flip runs for tens of microseconds, so
what a compiled call costs before its graph runs decides whether compiling pays. Dynamo
brackets the code that gathers the graph's arguments with a profiler marker. The first
class pins that the marker's recorders are not called while no profiler is attached;
the second that the marker is still recorded under a profiler, also one started after
the function was compiled, and that the arguments it brackets still arrive.
"""

from unittest import mock

import torch
import torch._dynamo.utils
from torch._dynamo.test_case import TestCase

MARKER = "Pregraph bytecode"


def _nested_args(x, inputs):
    return x + inputs["scale"] * inputs["items"][1].bias


class _Holder:
    def __init__(self):
        self.bias = torch.arange(4.0)


def _make_inputs():
    return torch.ones(4), {"scale": torch.full((4,), 2.0), "items": [None, _Holder()]}


def _marker_events(prof) -> list[str]:
    return [e.name for e in prof.events() if e.name == MARKER]


class PregraphMarkerTests(TestCase):
    """Without a profiler, compiled code does not call the marker's recorders."""

    def test_recorders_not_called_without_profiler(self):
        compiled = torch.compile(_nested_args, backend="eager", fullgraph=True)
        x, inputs = _make_inputs()
        compiled(x, inputs)
        utils = torch._dynamo.utils
        with (
            mock.patch.object(
                utils, "record_pregraph_bytecode_enter", wraps=utils.record_pregraph_bytecode_enter
            ) as enter,
            mock.patch.object(
                utils, "record_pregraph_bytecode_exit", wraps=utils.record_pregraph_bytecode_exit
            ) as exit_,
        ):
            for _ in range(3):
                self.assertEqual(compiled(x, inputs), _nested_args(x, inputs))
        self.assertEqual(enter.call_count, 0)
        self.assertEqual(exit_.call_count, 0)


class PregraphMarkerControlTests(TestCase):
    """The marker is recorded under a profiler, and only when configured."""

    def test_recorded_under_profiler_started_after_compile(self):
        compiled = torch.compile(_nested_args, backend="eager", fullgraph=True)
        x, inputs = _make_inputs()
        self.assertEqual(compiled(x, inputs), _nested_args(x, inputs))
        with torch.profiler.profile() as prof:
            self.assertEqual(compiled(x, inputs), _nested_args(x, inputs))
            self.assertEqual(compiled(x, inputs), _nested_args(x, inputs))
        self.assertEqual(len(_marker_events(prof)), 2)
        # And off again once the profiler is gone.
        self.assertEqual(compiled(x, inputs), _nested_args(x, inputs))

    def test_not_recorded_when_disabled(self):
        with torch._dynamo.config.patch(record_runtime_overhead=False):
            compiled = torch.compile(_nested_args, backend="eager", fullgraph=True)
            x, inputs = _make_inputs()
            compiled(x, inputs)
            with torch.profiler.profile() as prof:
                self.assertEqual(compiled(x, inputs), _nested_args(x, inputs))
        self.assertEqual(_marker_events(prof), [])

    def test_graph_break_frames_record_their_own_marker(self):
        def fn(x):
            y = x.sin()
            torch._dynamo.graph_break()
            return y.cos()

        compiled = torch.compile(fn, backend="eager")
        x = torch.randn(3)
        compiled(x)
        with torch.profiler.profile() as prof:
            self.assertEqual(compiled(x), fn(x))
        self.assertEqual(len(_marker_events(prof)), 2)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
