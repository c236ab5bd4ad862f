# Owner(s): ["module: dynamo"]
"""Property tests: dispatch through random class hierarchies, compiled vs eager.

Hypothesis generates class hierarchies (tensor subclasses and plain classes,
multiple inheritance, metaclasses), registries keyed by a dispatcher callable
and then by class, with kernels registered on random classes, and inputs that
are instances of random classes.  A dispatch function in the model's style
(look the dispatcher up, walk the input type's MRO to the first registered
class, raise ``ValueError``/``TypeError`` otherwise) is compiled with
``fullgraph=True`` and must:

* return what eager returns (values, dtypes, output types);
* when eager raises, raise the same exception type with the same message;
* compile one frame per input type (one in all when the dispatcher is not
  registered: it raises before looking at the input), and nothing more on
  repeated calls;
* have no graph break.

Dynamo 2.13 turns an exception that leaves a ``fullgraph=True`` frame into
``Unsupported``, whatever the exception (the "raise the user's exception when
it leaves the compiled frame" patch addresses that).  To keep these properties
independent of it, the compiled function catches the exception itself and
returns its type name and message, which are compared with eager's.

Profiles: ``ci`` (the default: derandomized, no example database, 50
examples) and ``local`` (500 examples), chosen with ``HYPOTHESIS_PROFILE``.

``MethodDispatcherPropertyTests`` needs the "hash and compare bound methods like
CPython" patch (dispatchers that are bound methods of objects, modules and
tensors, and classmethods); ``MroSpellingPropertyTests`` needs the "support
type.mro() and builtin classes' MRO introspection" patch (``cls.mro()``,
``type.mro(cls)``, builtin input types).  ``DispatchPropertyRegressionTests``
covers what already holds on 2.13.  ``PropertyCounterexampleTests`` turns the
counterexamples the properties found into plain tests (they need the bound
methods patch).
"""

import functools
import inspect

from hypothesis import given, strategies as st

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

from tv_dispatch_model import CompiledVsEagerMixin
from tv_hypothesis import profile


PROFILE = profile(ci_examples=50, local_examples=500)

BASE_VALUE = torch.linspace(0.0, 1.0, 6).reshape(2, 3)


class Payload:
    """Instances of plain classes carry their data in an attribute."""

    data: torch.Tensor


# --------------------------------------------------------------------------- dispatchers


def function_dispatcher(inpt):
    return inpt


lambda_dispatcher = lambda inpt: inpt  # noqa: E731


@functools.wraps(function_dispatcher)
def wrapped_dispatcher(inpt):
    return function_dispatcher(inpt)


PARTIAL_DISPATCHER = functools.partial(function_dispatcher)


class Holder:
    def method(self, inpt):
        return inpt

    @classmethod
    def from_class(cls, inpt):
        return inpt

    @staticmethod
    def static(inpt):
        return inpt


class HolderModule(torch.nn.Module):
    def method(self, inpt):
        return inpt


class CallableDispatcher:
    def __call__(self, inpt):
        return inpt


HOLDER = Holder()
MODULE = HolderModule()
CALLABLE = CallableDispatcher()
GLOBAL_TENSOR = torch.zeros(1)

# Each dispatcher is reached the way code reaches it: read inside the compiled
# function by a getter, while the registry was keyed on it before compiling.
BASE_DISPATCHERS = {
    "function": lambda: function_dispatcher,
    "lambda": lambda: lambda_dispatcher,
    "wraps": lambda: wrapped_dispatcher,
    "partial": lambda: PARTIAL_DISPATCHER,
    "staticmethod via class": lambda: Holder.static,
    "staticmethod via instance": lambda: HOLDER.static,
    "callable instance": lambda: CALLABLE,
    "OpOverload": lambda: torch.ops.aten.flip.default,
    "OpOverloadPacket": lambda: torch.ops.aten.flip,
}
METHOD_DISPATCHERS = {
    "bound method": lambda: HOLDER.method,
    "module method": lambda: MODULE.method,
    "classmethod via class": lambda: Holder.from_class,
    "classmethod via instance": lambda: HOLDER.from_class,
    "tensor method": lambda: GLOBAL_TENSOR.add,
}
ALL_DISPATCHERS = {**BASE_DISPATCHERS, **METHOD_DISPATCHERS}

# --------------------------------------------------------------------------- MRO walks


def mro_dunder(cls):
    return cls.__mro__


def mro_getmro(cls):
    return inspect.getmro(cls)


def mro_method(cls):
    return cls.mro()


def mro_type(cls):
    return type.mro(cls)


BASE_SPELLINGS = [mro_dunder, mro_getmro]
MRO_METHOD_SPELLINGS = [mro_method, mro_type]


def make_dispatch(getter, label, walk):
    def dispatch(registry, inpt):
        kernels = registry.get(getter())
        if kernels is None:
            raise ValueError(f"No kernel registered for dispatcher {label}.")
        for cls in walk(type(inpt)):
            if cls in kernels:
                return kernels[cls](inpt)
        raise TypeError(f"Dispatcher {label} does not support inputs of type {type(inpt).__name__}.")

    def checked_dispatch(registry, inpt):
        # Every graph gets an op, so that CompileCounter counts every frame.
        marker = torch.ones(())
        try:
            return marker, dispatch(registry, inpt)
        except (TypeError, ValueError) as e:
            return marker, (type(e).__name__, e.args[0])

    return checked_dispatch


def make_kernel(scale, offset):
    def kernel(inpt):
        if isinstance(inpt, torch.Tensor):
            return inpt * scale + offset
        if isinstance(inpt, Payload):
            return inpt.data * scale + offset
        return BASE_VALUE * scale + (offset + inpt)

    return kernel


# --------------------------------------------------------------------------- strategies


class PlainMeta(type):
    pass


class TensorMeta(type(torch.Tensor)):
    pass


@st.composite
def class_hierarchies(draw, max_classes=4):
    """Fresh classes: tensor subclasses and plain classes, some with a
    metaclass, some with two bases (tensor and plain bases may mix)."""
    classes = []
    for i in range(draw(st.integers(1, max_classes))):
        is_tensor = draw(st.booleans())
        candidates = [c for c in classes if not is_tensor or issubclass(c, torch.Tensor)]
        if is_tensor:
            candidates += [c for c in classes if not issubclass(c, torch.Tensor)]
        bases = draw(st.lists(st.sampled_from(candidates), max_size=2, unique=True)) if candidates else []
        if is_tensor and not any(issubclass(b, torch.Tensor) for b in bases):
            bases.insert(0, torch.Tensor)
        if not is_tensor and not bases:
            bases = [Payload]
        meta = draw(st.sampled_from([None, TensorMeta if is_tensor else PlainMeta]))
        name = f"{'T' if is_tensor else 'P'}{i}"
        try:
            cls = (meta or type)(name, tuple(bases), {})
        except TypeError:
            # Inconsistent MRO or metaclass conflict: fall back to one base.
            cls = type(name, (bases[0],), {})
        classes.append(cls)
    return classes


BUILTIN_INPUTS = {int: 3, bool: True, float: 0.5}


def make_input(cls, seed):
    if cls in BUILTIN_INPUTS:
        return BUILTIN_INPUTS[cls]
    data = BASE_VALUE + seed
    if issubclass(cls, torch.Tensor):
        return data.as_subclass(cls)
    inpt = object.__new__(cls)
    inpt.data = data
    return inpt


@st.composite
def scenarios(draw, dispatchers, spellings, queried=None, builtin_inputs=False):
    classes = draw(class_hierarchies())
    candidates = [*classes, torch.Tensor, Payload, object]
    if builtin_inputs:
        candidates += list(BUILTIN_INPUTS)
    labels = sorted(dispatchers)
    registered = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=3, unique=True))
    registry = {}
    for k, label in enumerate(registered):
        kernel_classes = draw(st.lists(st.sampled_from(candidates), max_size=4, unique=True))
        kernels = registry.setdefault(dispatchers[label](), {})
        for j, cls in enumerate(kernel_classes):
            kernels.setdefault(cls, make_kernel(float(k + 2), float(j)))
    label = draw(st.sampled_from(sorted(queried or labels)))
    walk = draw(st.sampled_from(spellings))
    input_classes = [*classes, torch.Tensor]
    if builtin_inputs:
        input_classes += list(BUILTIN_INPUTS)
    inputs = draw(st.lists(st.sampled_from(input_classes), min_size=1, max_size=3, unique=True))
    dispatch = make_dispatch(dispatchers[label], label, walk)
    return dispatch, registry, inputs, dispatchers[label]() in registry


class DispatchPropertyMixin(CompiledVsEagerMixin):
    def check_scenario(self, scenario):
        dispatch, registry, input_classes, registered = scenario
        torch._dynamo.reset()
        counters.clear()
        cnt = CompileCounter()
        compiled = torch.compile(dispatch, backend=cnt, fullgraph=True)
        for seed in range(2):
            for index, cls in enumerate(input_classes):
                inpt = make_input(cls, seed)
                eager = dispatch(registry, inpt)
                # One frame per input type: the second round must not compile.
                with torch._dynamo.config.patch(error_on_recompile=seed > 0):
                    out = compiled(registry, inpt)
                self.assertSameOutput(eager, out)
                # One frame per input type; an unregistered dispatcher raises
                # before looking at the input, so its graph fits every type.
                expected = len(input_classes) if seed else index + 1
                self.assertEqual(cnt.frame_count, expected if registered else 1)
        self.assertEqual(len(counters["graph_break"]), 0)


class DispatchPropertyRegressionTests(DispatchPropertyMixin, torch._dynamo.test_case.TestCase):
    @PROFILE
    @given(scenarios(BASE_DISPATCHERS, BASE_SPELLINGS))
    def test_function_like_dispatchers_walking_dunder_mro(self, scenario):
        self.check_scenario(scenario)


class MethodDispatcherPropertyTests(DispatchPropertyMixin, torch._dynamo.test_case.TestCase):
    @PROFILE
    @given(scenarios(ALL_DISPATCHERS, BASE_SPELLINGS, queried=METHOD_DISPATCHERS))
    def test_method_dispatchers(self, scenario):
        self.check_scenario(scenario)


class MroSpellingPropertyTests(DispatchPropertyMixin, torch._dynamo.test_case.TestCase):
    @PROFILE
    @given(scenarios(BASE_DISPATCHERS, MRO_METHOD_SPELLINGS, builtin_inputs=True))
    def test_mro_method_walks(self, scenario):
        self.check_scenario(scenario)


class CounterexampleP0(Payload):
    pass


class PropertyCounterexampleTests(DispatchPropertyMixin, torch._dynamo.test_case.TestCase):
    """Counterexamples the property tests found, as plain tests.

    On 2.13 a classmethod dispatcher read in the graph does not find the
    registry entry keyed on it before compiling: the compiled dispatch
    reports "not registered" (ValueError) where eager finds the kernel.
    """

    def test_classmethod_dispatcher_finds_its_kernel(self):
        kernel = make_kernel(2.0, 0.0)
        registry = {Holder.from_class: {CounterexampleP0: kernel}, torch.ops.aten.flip.default: {}}
        for label in ("classmethod via class", "classmethod via instance"):
            with self.subTest(label=label):
                dispatch = make_dispatch(METHOD_DISPATCHERS[label], label, mro_dunder)
                self.check_scenario((dispatch, registry, [CounterexampleP0], True))

    def test_classmethod_dispatcher_without_kernels_raises_type_error(self):
        registry = {Holder.from_class: {}}
        dispatch = make_dispatch(METHOD_DISPATCHERS["classmethod via class"], "classmethod", mro_dunder)
        self.check_scenario((dispatch, registry, [CounterexampleP0], True))
        self.assertEqual(
            dispatch(registry, make_input(CounterexampleP0, 0))[1],
            ("TypeError", "Dispatcher classmethod does not support inputs of type CounterexampleP0."),
        )


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
