# Owner(s): ["module: dynamo"]
"""Exceptions that leave the compiled frame, as torchvision's input validation raises them.

``UncaughtRaiseTests`` covers what Dynamo gets wrong without the "raise the
user's exception under fullgraph" patch: when the traced path ends in a
``raise`` that no handler in the compiled frame catches, the compiled function
must raise what eager raises (type, args, ``__cause__``, ``__context__``,
``__suppress_context__``, attributes of user exception classes) after the side
effects eager performs before the raise, and only for inputs that take that
path.

``UncaughtRaiseRegressionTests`` holds controls that behave the same without
the patch: exceptions handled inside the frame, valid inputs, and exceptions
that Dynamo builds itself (which keep the graph break).
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.exc import Unsupported
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

from tv_dispatch_model import adjust_brightness, CompiledVsEagerMixin, horizontal_flip, make_image
from tv_model_errors import ERROR_CASES
from tv_model_kernels import adjust_hue, gaussian_blur


class InputError(ValueError):
    pass


class KernelError(Exception):
    def __init__(self, name, code):
        super().__init__(f"kernel {name} failed")
        self.name = name
        self.code = code


class Holder:
    pass


def exception_state(e, depth=0):
    """What a caller can observe of an exception, its chain included (tracebacks aside)."""
    if e is None:
        return None
    if depth > 4:
        return "..."
    return (
        type(e),
        e.args,
        dict(vars(e)),
        e.__suppress_context__,
        exception_state(e.__cause__, depth + 1),
        exception_state(e.__context__, depth + 1),
    )


class ExceptionCheckMixin(CompiledVsEagerMixin):
    def raised(self, fn, *args):
        with self.assertRaises(BaseException) as cm:
            fn(*args)
        return cm.exception

    def check_same_exception(self, fn, make_args, *, fullgraph=True, frame_count=None):
        """``fn(*make_args())`` raises the same exception compiled as in eager."""
        torch._dynamo.reset()
        counters.clear()
        expected = self.raised(fn, *make_args())
        cnt = CompileCounter()
        got = self.raised(torch.compile(fn, backend=cnt, fullgraph=fullgraph), *make_args())
        self.assertIsNot(type(got), Unsupported, msg=str(got))
        self.assertEqual(exception_state(got), exception_state(expected))
        self.assertEqual(len(counters["graph_break"]), 0)
        if frame_count is not None:
            self.assertEqual(cnt.frame_count, frame_count)
        return got


class UncaughtRaiseTests(ExceptionCheckMixin, torch._dynamo.test_case.TestCase):
    def test_get_kernel_type_error_lists_registry_keys(self):
        e = self.check_same_exception(horizontal_flip, lambda: (object(),))
        self.assertIsInstance(e, TypeError)
        self.assertRegex(
            str(e),
            r"^Functional F.horizontal_flip supports inputs of type dict_keys\(\[.*"
            r"<class 'torch.Tensor'>.*\]\), but got <class 'object'> instead.$",
        )

    def test_constant_message(self):
        e = self.check_same_exception(adjust_brightness, lambda: (make_image(), -0.5))
        self.assertEqual(str(e), "brightness_factor is not non-negative.")

    def test_fstring_over_types_and_values(self):
        e = self.check_same_exception(gaussian_blur, lambda: (make_image(), [4, 3]))
        self.assertEqual(str(e), "kernel_size should have two positive odd values. Got [4, 3]")
        e = self.check_same_exception(adjust_hue, lambda: (make_image(), 0.8))
        self.assertEqual(str(e), "hue_factor (0.8) is not in [-0.5, 0.5].")

        def fn(x, y):
            if x.dtype != y.dtype:
                raise TypeError(f"{type(x).__name__} of {x.dtype} and {type(y)} of {y.dtype}: {x.shape} vs {y.shape}")
            return x + y

        self.check_same_exception(fn, lambda: (torch.ones(2), torch.ones(3, dtype=torch.int64)))

    def test_model_error_paths(self):
        for name, (fn, make_args) in ERROR_CASES.items():
            with self.subTest(name):
                self.check_same_exception(fn, make_args)

    def test_raise_class(self):
        def fn(x):
            x = x + 1
            raise NotImplementedError

        self.check_same_exception(fn, lambda: (torch.ones(2),), frame_count=1)

    def test_assert(self):
        def check(x):
            assert x.shape[0] == 3, "expected 3 channels"
            return x + 1

        def fn(x):
            return check(x) * 2

        e = self.check_same_exception(fn, lambda: (torch.ones(2),))
        self.assertIsInstance(e, AssertionError)
        self.check_same_exception(check, lambda: (torch.ones(2),))

    def test_user_exception_class(self):
        def fn(x, level):
            if level > 2:
                raise InputError(f"level {level} is above 2 for {type(x).__name__}")
            return x * level

        e = self.check_same_exception(fn, lambda: (torch.ones(2), 3))
        self.assertIs(type(e), InputError)

    def test_user_exception_with_init(self):
        def fn(x):
            raise KernelError("blur", 7)

        e = self.check_same_exception(fn, lambda: (torch.ones(2),))
        self.assertEqual((e.args, e.name, e.code), (("kernel blur failed",), "blur", 7))

    def test_raise_from_none(self):
        def fn(x):
            try:
                raise KernelError("lookup", 1)
            except KernelError:
                raise InputError("no kernel for this input") from None

        e = self.check_same_exception(fn, lambda: (torch.ones(2),))
        self.assertIsNone(e.__cause__)
        self.assertTrue(e.__suppress_context__)
        self.assertIsInstance(e.__context__, KernelError)

    def test_builtin_raise_from_none(self):
        def fn(x):
            try:
                raise KeyError("x")
            except KeyError:
                raise TypeError("unsupported input") from None

        e = self.check_same_exception(fn, lambda: (torch.ones(2),))
        self.assertTrue(e.__suppress_context__)

    def test_raise_from_cause(self):
        def fn(x):
            try:
                raise KeyError("fill")
            except KeyError as err:
                raise InputError("bad fill") from err

        e = self.check_same_exception(fn, lambda: (torch.ones(2),))
        self.assertIsInstance(e.__cause__, KeyError)

    def test_implicit_context(self):
        def fn(x):
            try:
                raise InputError("first")
            except InputError:
                raise KernelError("second", 2)

        e = self.check_same_exception(fn, lambda: (torch.ones(2),))
        self.assertIsInstance(e.__context__, InputError)
        self.assertFalse(e.__suppress_context__)

    def test_bare_reraise(self):
        def fn(x, log):
            try:
                raise InputError("bad input")
            except InputError:
                log.append("logged")
                raise

        logs = []
        self.check_same_exception(fn, lambda: (torch.ones(2), logs.append([]) or logs[-1]))
        self.assertEqual(logs, [["logged"], ["logged"]])

    def test_tensor_in_args(self):
        def fn(x):
            y = x * 2
            raise ValueError("bad values", y)

        e = self.check_same_exception(fn, lambda: (torch.arange(3.0),))
        self.assertEqual(e.args[1], torch.arange(3.0) * 2)

    def test_side_effects_before_raise(self):
        def fn(x, log, holder):
            log.append(x.sum())
            holder.seen = x.shape[0]
            holder.scaled = x * 3
            x.add_(1)
            raise InputError(f"rejected input of length {x.shape[0]}")

        def run(f):
            x, log, holder = torch.arange(4.0), [], Holder()
            with self.assertRaises(InputError):
                f(x, log, holder)
            return x, log, vars(holder)

        torch._dynamo.reset()
        cnt = CompileCounter()
        eager = run(fn)
        compiled = run(torch.compile(fn, backend=cnt, fullgraph=True))
        self.assertEqual(compiled, eager)
        self.assertEqual(cnt.frame_count, 1)

    def test_finally_runs_before_raise(self):
        def fn(x, log):
            try:
                raise InputError("bad")
            finally:
                log.append(x + 1)

        logs = []
        self.check_same_exception(fn, lambda: (torch.ones(2), logs.append([]) or logs[-1]))
        self.assertEqual(logs, [[torch.full((2,), 2.0)], [torch.full((2,), 2.0)]])

    def test_grad_mode_restored(self):
        def fn(x):
            with torch.no_grad():
                x = x * 2
                raise InputError("inside no_grad")

        self.check_same_exception(fn, lambda: (torch.ones(2, requires_grad=True),))
        self.assertTrue(torch.is_grad_enabled())

    def test_valid_inputs_compile_their_own_graph(self):
        torch._dynamo.reset()
        cnt = CompileCounter()
        opt = torch.compile(adjust_brightness, backend=cnt, fullgraph=True)
        image = make_image(torch.uint8)
        with self.assertRaises(ValueError):
            opt(image, -1.0)
        self.assertEqual(cnt.frame_count, 0)  # nothing to compute before the raise
        self.assertSameOutput(adjust_brightness(image, 1.5), opt(image, 1.5))
        self.assertEqual(cnt.frame_count, 1)
        with torch._dynamo.config.patch(error_on_recompile=True):
            with self.assertRaises(ValueError):
                opt(image, -1.0)
            self.assertSameOutput(adjust_brightness(image, 1.5), opt(image, 1.5))

    def test_raising_path_is_guarded(self):
        def fn(x, obj):
            y = x + 1
            if isinstance(obj, Holder):
                raise TypeError(f"{type(obj).__name__} is not supported")
            return y * 2

        torch._dynamo.reset()
        cnt = CompileCounter()
        opt = torch.compile(fn, backend=cnt, fullgraph=True)
        x = torch.ones(3)
        self.assertRaises(TypeError, opt, x, Holder())
        self.assertEqual(opt(x, 1.0), fn(x, 1.0))
        self.assertEqual(cnt.frame_count, 2)
        self.assertRaises(TypeError, opt, x, Holder())
        self.assertEqual(cnt.frame_count, 2)

    def test_dynamic_size_in_message(self):
        def fn(x):
            if x.shape[0] > 4:
                raise ValueError(f"at most 4 channels, got {x.shape[0]}")
            return x + 1

        torch._dynamo.reset()
        opt = torch.compile(fn, backend="eager", fullgraph=True, dynamic=True)
        for n in (2, 6, 3, 7):
            x = torch.ones(n)
            if n > 4:
                with self.assertRaisesRegex(ValueError, f"at most 4 channels, got {n}$"):
                    opt(x)
            else:
                self.assertEqual(opt(x), fn(x))

    def test_without_fullgraph_no_graph_break(self):
        def fn(x):
            y = x.sin()
            raise InputError("no", y)

        self.check_same_exception(fn, lambda: (torch.ones(2),), fullgraph=False, frame_count=1)


class UncaughtRaiseRegressionTests(ExceptionCheckMixin, torch._dynamo.test_case.TestCase):
    def test_handled_inside_frame(self):
        def fn(x, obj):
            try:
                return horizontal_flip(obj)
            except TypeError as e:
                return x + len(e.args)

        self.check_one_frame(fn, torch.ones(2), Holder())

    def test_valid_input(self):
        self.check_one_frame(adjust_brightness, make_image(torch.uint8), 1.5)

    def test_dynamo_built_exception_keeps_graph_break(self):
        # A KeyError Dynamo models for a missing dict key is Dynamo's
        # approximation of CPython's; it is not raised from compiled code.
        def fn(x, d):
            return x + d["missing"]

        torch._dynamo.reset()
        with self.assertRaisesRegex(Unsupported, "Observed exception"):
            torch.compile(fn, backend="eager", fullgraph=True)(torch.ones(2), {})

    def test_dynamo_built_context_keeps_graph_break(self):
        def fn(x, d):
            try:
                return x + d["missing"]
            except KeyError:
                raise InputError("missing key") from None

        torch._dynamo.reset()
        with self.assertRaisesRegex(Unsupported, "Observed exception"):
            torch.compile(fn, backend="eager", fullgraph=True)(torch.ones(2), {})


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
