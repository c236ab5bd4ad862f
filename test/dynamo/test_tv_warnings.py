# Owner(s): ["module: dynamo"]
"""warnings.warn inside a function compiled with fullgraph=True.

torchvision's v2 transforms warn from inside ``forward``: ``RandomErasing`` on a sample with
boxes or masks ("RandomErasing() is currently passing through inputs of type
tv_tensors.BoundingBoxes. ..."), ``ToDtype`` given a dict on a pure tensor.  Dynamo used to stop
at ``_warnings.warn``; now it replays the call after the graph, as
``warnings.warn_explicit`` with the filename, line, module and registry eager's ``stacklevel``
picks, so the warning filters ("default", "once", "error", ...) see what they see in eager.

``WarningsWarnTests``: each warning the compiled function issues is eager's (message,
category, filename, lineno), in eager's order; per-location and "once" deduplication act as in
eager; a filter that makes the warning an error raises it as eager does, also when the filter is
installed after compiling.  ``WarningsWarnFallbackTests``: calls Dynamo cannot replay faithfully
keep the graph break and behave as in eager.
"""

import warnings

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters


class PassThroughWarning(UserWarning):
    pass


EVENTS = []


def log_event(*args):
    EVENTS.append(args)


def warn_passthrough(transform, inpt):
    # torchvision's Transform._call_kernel/_transform shape: a warning whose
    # message names types, formatted at trace time.
    warnings.warn(
        f"{type(transform).__name__}() is currently passing through inputs of type "
        f"{type(inpt).__name__}. This will likely change in the future."
    )
    return inpt


class Erasing:
    def __call__(self, image, extra):
        out = image * 0
        return out, warn_passthrough(self, extra)


def deprecated_helper(x):
    warnings.warn("deprecated_helper is deprecated", DeprecationWarning, stacklevel=2)
    return x * 2


def two_levels_helper(x):
    return deprecated_three(x)


def deprecated_three(x):
    warnings.warn(
        "reported two frames up",
        category=FutureWarning,
        stacklevel=3,
    )
    return x - 1


def warn_then_add(x):
    warnings.warn("plain warning")
    return x + 1


def warn_twice_two_sites(x):
    x = deprecated_helper(x)
    x = deprecated_helper(x)
    return x


def warn_and_mutate(x, lst):
    lst.append(1)
    warnings.warn("between appends", PassThroughWarning)
    lst.append(2)
    return x + 1


def warn_then_raise(x):
    warnings.warn("about to fail")
    raise ValueError("bad input")


def ordered_events(x):
    log_event("before")
    warnings.warn("middle")
    y = x + 1
    log_event("after", y)
    warnings.warn("last", RuntimeWarning)
    return y


def record(fn, *args, action="always"):
    """Call fn under a fresh filter state; return its result (or exception)
    and the warnings shown, as (message, category, filename, lineno)."""
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter(action)
        try:
            out = fn(*args)
        except Exception as e:  # noqa: BLE001
            out = e
    return out, [(str(w.message), w.category, w.filename, w.lineno) for w in ws]


class WarningsWarnTests(torch._dynamo.test_case.TestCase):
    def check_same(self, fn, *args, action="always", frames=1):
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        eager_out, eager_ws = record(fn, *args, action=action)
        out, ws = record(compiled, *args, action=action)
        self.assertEqual(out, eager_out)
        self.assertEqual(ws, eager_ws)
        self.assertTrue(len(eager_ws) > 0)
        self.assertEqual(cnt.frame_count, frames)
        self.assertEqual(len(counters["graph_break"]), 0)
        return ws

    def test_warn_constant_message(self):
        ws = self.check_same(warn_then_add, torch.ones(3))
        self.assertEqual(ws[0][:2], ("plain warning", UserWarning))
        self.assertEqual(ws[0][2], __file__)

    def test_warn_formatted_passthrough_message(self):
        ws = self.check_same(Erasing(), torch.ones(2, 3), torch.zeros(4))
        self.assertEqual(
            ws[0][0],
            "Erasing() is currently passing through inputs of type Tensor. "
            "This will likely change in the future.",
        )

    def test_stacklevel_names_the_inlined_caller(self):
        def fn(x):
            return deprecated_helper(x) + 1

        ws = self.check_same(fn, torch.ones(3))
        # the caller's line, not the helper's
        self.assertEqual(ws[0][1], DeprecationWarning)
        self.assertEqual(ws[0][3], fn.__code__.co_firstlineno + 1)

    def test_stacklevel_three_multiline_call(self):
        def fn(x):
            y = x * 3
            return two_levels_helper(
                y
            )

        ws = self.check_same(fn, torch.ones(3))
        self.assertEqual(ws[0][1], FutureWarning)
        self.assertEqual(ws[0][3], fn.__code__.co_firstlineno + 2)

    def test_warnings_in_program_order_with_logging(self):
        def run(f, x):
            EVENTS.clear()
            # catch_warnings restores showwarning on exit
            with warnings.catch_warnings():
                warnings.simplefilter("always")
                warnings.showwarning = lambda m, c, *a, **k: EVENTS.append(
                    ("warn", str(m), c)
                )
                out = f(x)
            return out, list(EVENTS)

        x = torch.ones(2)
        eager = run(ordered_events, x)
        with torch._dynamo.config.patch(reorderable_logging_functions={log_event}):
            compiled = run(torch.compile(ordered_events, backend="eager", fullgraph=True), x)
        self.assertEqual(compiled, eager)
        self.assertEqual(len(counters["graph_break"]), 0)

    def test_warning_before_mutations_and_raise(self):
        lst, lst2 = [], []
        eager = record(warn_and_mutate, torch.ones(2), lst)
        compiled = record(
            torch.compile(warn_and_mutate, backend="eager", fullgraph=True),
            torch.ones(2),
            lst2,
        )
        self.assertEqual(compiled, eager)
        self.assertEqual(lst2, lst)

        out, ws = record(torch.compile(warn_then_raise, backend="eager", fullgraph=True), torch.ones(2))
        eager_out, eager_ws = record(warn_then_raise, torch.ones(2))
        self.assertIs(type(out), ValueError)
        self.assertEqual(str(out), str(eager_out))
        self.assertEqual(ws, eager_ws)

    def test_default_action_deduplicates_per_location(self):
        cnt = CompileCounter()
        compiled = torch.compile(warn_twice_two_sites, backend=cnt, fullgraph=True)
        x = torch.ones(2)

        def three_calls(f):
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("default")
                for _ in range(3):
                    f(x)
            return [(str(w.message), w.category, w.filename, w.lineno) for w in ws]

        eager = three_calls(warn_twice_two_sites)
        with torch._dynamo.config.patch(error_on_recompile=True):
            got = three_calls(compiled)
        # one per call site of the helper, not one per call
        self.assertEqual(len(eager), 2)
        self.assertEqual(got, eager)
        self.assertEqual(cnt.frame_count, 1)

    def test_once_action(self):
        def fn(x):
            x = deprecated_helper(x)
            return deprecated_helper(x)

        compiled = torch.compile(fn, backend="eager", fullgraph=True)

        def twice(f):
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("once")
                f(torch.ones(2))
                f(torch.ones(2))
            return [(str(w.message), w.lineno) for w in ws]

        eager = twice(fn)
        self.assertEqual(len(eager), 1)
        self.assertEqual(twice(compiled), eager)

    def test_error_filter_raises_like_eager(self):
        def run(f):
            lst = []
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                try:
                    f(torch.ones(2), lst)
                except PassThroughWarning as e:
                    return type(e), str(e), lst
            return None, None, lst

        eager = run(warn_and_mutate)
        self.assertEqual(eager, (PassThroughWarning, "between appends", [1]))
        # compiled first under "always": the guard must not keep that code
        # once an "error" filter is installed
        cnt = CompileCounter()
        compiled = torch.compile(warn_and_mutate, backend=cnt)
        _, ws = record(compiled, torch.ones(2), [])
        self.assertEqual(len(ws), 1)
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(len(counters["graph_break"]), 0)
        # the guard sends the call to a new compile, which keeps the graph
        # break: the warning raises at the call, before the second append
        self.assertEqual(run(compiled), eager)
        self.assertEqual(len(counters["graph_break"]), 1)
        self.assertEqual(run(compiled), eager)

    def test_error_filter_for_another_message_still_compiles(self):
        cnt = CompileCounter()
        compiled = torch.compile(warn_then_add, backend=cnt, fullgraph=True)
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            warnings.filterwarnings("error", message="something else")
            warnings.filterwarnings("error", category=DeprecationWarning)
            out = compiled(torch.ones(2))
        self.assertEqual(out, torch.ones(2) + 1)
        self.assertEqual([str(w.message) for w in ws], ["plain warning"])
        self.assertEqual(cnt.frame_count, 1)


class WarningsWarnFallbackTests(torch._dynamo.test_case.TestCase):
    def test_catch_warnings_in_compiled_code(self):
        def fn(x):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                warnings.warn("silenced")
            return x + 1

        out, ws = record(torch.compile(fn, backend="eager"), torch.ones(2))
        eager_out, eager_ws = record(fn, torch.ones(2))
        self.assertEqual(out, eager_out)
        self.assertEqual(ws, eager_ws)

    def test_stacklevel_outside_the_compiled_frame(self):
        def fn(x):
            warnings.warn("for my caller", stacklevel=2)
            return x + 1

        cnt = CompileCounter()
        out, ws = record(torch.compile(fn, backend=cnt), torch.ones(2))
        self.assertEqual(out, torch.ones(2) + 1)
        self.assertEqual([w[0] for w in ws], ["for my caller"])

    def test_non_constant_message(self):
        def fn(x):
            warnings.warn(str(x.sum()))
            return x + 1

        out, ws = record(torch.compile(fn, backend="eager"), torch.ones(2))
        eager_out, eager_ws = record(fn, torch.ones(2))
        self.assertEqual(out, eager_out)
        self.assertEqual([w[:2] for w in ws], [w[:2] for w in eager_ws])


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
