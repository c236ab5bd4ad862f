# Owner(s): ["module: dynamo"]
"""Dispatcher callables as dict keys, hashed, compared and looked up like CPython.

``IdentityKeyedRegistryGuardTests`` needs the "guard dict lookups keyed by
object identity" patch: a registry keyed by objects (transform instances) and
looked up with an argument must be guarded on which object the argument is,
both when it is found (an aliasing guard between the argument and the key, one
local, one global) and when it is not (it must stay absent).

``BoundMethodKeyTests`` needs the "hash and compare bound methods like
CPython" patch: bound methods of tensors (``x.add``), of user objects and of
``nn.Module``\\ s, and classmethods reached through the class or an instance,
as keys of dicts made in the graph or before it.  Two bound methods are equal
iff they wrap the same function and are bound to the same object.

``CallableKeyRegressionTests`` holds constructs that already work on 2.13 and
must keep working: bound methods found through the same object in a dict made
in the graph, static methods, callable instances reached through a global or
made in the graph, ``functools.partial`` and aten
``OpOverload``/``OpOverloadPacket`` keys, and a registry key replaced by the
argument's instance (the dict-keys guard notices).
"""

import dataclasses
import functools

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

from tv_dispatch_model import CompiledVsEagerMixin, make_image
from tv_model_dispatch import (
    BRIGHTEN,
    Brighten,
    DARKEN,
    FLIP_MODULE,
    FlipModule,
    FUNCTIONALS,
    Functionals,
    METHOD_REGISTRY,
    MoreFunctionals,
    OTHER_FUNCTIONALS,
    SCALE_PARTIAL,
    Scaler,
)


@dataclasses.dataclass
class Unhashable:
    value: float = 1.0

    def method(self, x):
        return x * self.value


TRANSFORM_REGISTRY = {BRIGHTEN: 2.0}
SWAP_REGISTRY = {BRIGHTEN: 2.0}
METHOD_SWAP_REGISTRY = {FUNCTIONALS.flip: 2.0}
TENSOR_METHOD_REGISTRY = {}
GLOBAL_TENSOR = torch.arange(4.0)


class CallSequenceMixin(CompiledVsEagerMixin):
    def run_sequence(self, fn, calls, frames):
        """Call ``fn`` compiled on each argument tuple; equal to eager each time.

        ``frames[i]`` is the frame count expected after call ``i``; a call that
        must not compile runs under error_on_recompile.
        """
        torch._dynamo.reset()
        counters.clear()
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        previous = 0
        for args, expected_frames in zip(calls, frames, strict=True):
            eager = fn(*args)
            with torch._dynamo.config.patch(error_on_recompile=expected_frames == previous):
                out = compiled(*args)
            self.assertSameOutput(eager, out)
            self.assertEqual(cnt.frame_count, expected_frames)
            previous = expected_frames
        self.assertEqual(len(counters["graph_break"]), 0)


class IdentityKeyedRegistryGuardTests(CallSequenceMixin, torch._dynamo.test_case.TestCase):
    def test_argument_found_then_other_instances(self):
        # Found: the argument aliases a key of the global registry.  Another
        # instance of the same class must not reuse that graph.
        def fn(x, transform):
            return x * TRANSFORM_REGISTRY.get(transform, -1.0)

        x = make_image()
        other = Brighten(1.5)
        self.run_sequence(
            fn,
            [(x, BRIGHTEN), (x, other), (x, DARKEN), (x, BRIGHTEN), (x, other)],
            [1, 2, 2, 2, 2],
        )

    def test_argument_missing_then_registered_instance(self):
        # Missing first: the graph that returns the default must not serve an
        # instance that is in the registry.
        def fn(x, transform):
            if transform in TRANSFORM_REGISTRY:
                return transform(x) * TRANSFORM_REGISTRY[transform]
            return x

        x = make_image()
        self.run_sequence(
            fn, [(x, DARKEN), (x, BRIGHTEN), (x, Brighten(3.0)), (x, DARKEN)], [1, 2, 2, 2]
        )


class BoundMethodKeyTests(CallSequenceMixin, torch._dynamo.test_case.TestCase):
    def test_tensor_bound_methods(self):
        def fn(x, y):
            table = {x.add: 1.0, x.mul: 2.0}
            found = table[x.add] + table.get(x.mul, 0.0)
            missing = (y.add in table) + (x.sub in table)
            same = (x.add == x.add) and (x.add != y.add) and not (x.add == x.mul)
            return x * found + missing, same, len({x.add, x.add, y.add})

        out = self.check_one_frame(fn, make_image(), make_image(seed=1))
        self.assertEqual(out[1:], (True, 2))

    def test_tensor_bound_method_of_alias(self):
        # add_ returns its input: y is x, so y.add == x.add.
        def fn(x):
            x = x.clone()
            table = {x.add: 3.0}
            y = x.add_(1)
            return y * table[y.add]

        self.check_one_frame(fn, make_image())

    def test_tensor_bound_method_made_before_the_graph(self):
        def fn(x):
            return x * TENSOR_METHOD_REGISTRY.get(x.add, -1.0) + TENSOR_METHOD_REGISTRY[GLOBAL_TENSOR.add]

        TENSOR_METHOD_REGISTRY[GLOBAL_TENSOR.add] = 2.0
        self.addCleanup(TENSOR_METHOD_REGISTRY.clear)
        other = torch.ones(4)
        self.run_sequence(
            fn, [(GLOBAL_TENSOR,), (other,), (GLOBAL_TENSOR,), (torch.zeros(4),)], [1, 2, 2, 2]
        )

    def test_user_methods_in_global_registry(self):
        def fn(x):
            return (
                x * METHOD_REGISTRY[FUNCTIONALS.flip]
                + METHOD_REGISTRY.get(OTHER_FUNCTIONALS.flip, 100.0)
                + (FUNCTIONALS.brighten in METHOD_REGISTRY)
            )

        out = self.check_one_frame(fn, make_image())
        self.assertEqual(out, make_image() + 100.0)

    def test_user_method_of_argument_in_global_registry(self):
        def fn(x, functionals):
            return x * METHOD_REGISTRY.get(functionals.flip, 0.5)

        x = make_image()
        self.run_sequence(
            fn,
            [(x, FUNCTIONALS), (x, OTHER_FUNCTIONALS), (x, Functionals()), (x, FUNCTIONALS)],
            [1, 2, 2, 2],
        )

    def test_module_methods(self):
        def registry_lookup(x, module):
            return x * METHOD_REGISTRY.get(module.flip, 0.5)

        x = make_image()
        # The module keys its own table on its bound methods in __init__.
        self.check_one_frame(FLIP_MODULE, x)
        self.run_sequence(
            registry_lookup,
            [(x, FLIP_MODULE), (x, FlipModule()), (x, FLIP_MODULE)],
            [1, 2, 2],
        )

    def test_classmethod_through_class_and_instance(self):
        def fn(x):
            via_class = METHOD_REGISTRY[Functionals.from_class]
            via_instance = METHOD_REGISTRY[FUNCTIONALS.from_class]
            via_new_instance = METHOD_REGISTRY[Functionals().from_class]
            # Bound to the subclass: a different method.
            subclass = METHOD_REGISTRY.get(MoreFunctionals.from_class, 10.0)
            return x * via_class + via_instance + via_new_instance + subclass

        out = self.check_one_frame(fn, make_image())
        self.assertEqual(out, make_image() * 3.0 + 16.0)

    def test_methods_of_distinct_objects_differ(self):
        def fn(x, a, b):
            return (
                x + 1,
                a.flip == b.flip,
                a.flip != b.flip,
                Functionals().flip == Functionals().flip,
                a.flip == Functionals.flip,
                Functionals.flip == a.flip,
                a.flip == a.brighten,
                a.flip == a.flip,
                len({a.flip: 1, b.flip: 2, a.flip: 3}),
            )

        out = self.check_one_frame(fn, make_image(), FUNCTIONALS, OTHER_FUNCTIONALS)
        self.assertEqual(out[1:], (False, True, False, False, False, False, True, 2))

    def test_method_of_unhashable_object(self):
        # eq=True dataclasses are unhashable; their bound methods hash by the
        # identity of __self__.
        def fn(x):
            obj = Unhashable(2.0)
            scaler = Scaler(3.0)
            table = {obj.method: 1.0, scaler.apply: 2.0}
            return obj.method(x) * table[obj.method] + table[scaler.apply], len(table)

        out = self.check_one_frame(fn, make_image())
        self.assertEqual(out[1], 2)

    def test_distinct_method_objects_find_each_other(self):
        # Each attribute read makes a new method object; equal ones must match.
        methods = [FUNCTIONALS.flip, FUNCTIONALS.flip, OTHER_FUNCTIONALS.flip]

        def fn(x):
            table = {methods[0]: 2.0}
            return x * table[methods[1]] + (methods[2] in table), methods[0] == methods[1]

        out = self.check_one_frame(fn, make_image())
        self.assertTrue(out[1])

    def test_registry_key_replaced(self):
        def fn(x):
            return x * METHOD_SWAP_REGISTRY.get(FUNCTIONALS.flip, 0.5)

        x = make_image()
        torch._dynamo.reset()
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        self.assertEqual(compiled(x), x * 2.0)
        try:
            for key, expected, frames in [
                (OTHER_FUNCTIONALS.flip, x * 0.5, 2),  # same function, other object
                (FUNCTIONALS.brighten, x * 0.5, 3),  # same object, other function
                (FUNCTIONALS.flip, x * 2.0, 3),  # an equal key: the first graph
            ]:
                METHOD_SWAP_REGISTRY.clear()
                METHOD_SWAP_REGISTRY[key] = 2.0
                self.assertEqual(compiled(x), expected)
                self.assertEqual(fn(x), expected)
                self.assertEqual(cnt.frame_count, frames)
        finally:
            METHOD_SWAP_REGISTRY.clear()
            METHOD_SWAP_REGISTRY[FUNCTIONALS.flip] = 2.0


class CallableKeyRegressionTests(CallSequenceMixin, torch._dynamo.test_case.TestCase):
    def test_methods_read_twice_in_a_graph_dict(self):
        def fn(x, functionals):
            table = {
                functionals.flip: 1.0,
                FLIP_MODULE.flip: 2.0,
                Functionals.from_class: 3.0,
                functionals.static: 4.0,
            }
            total = table[functionals.flip] + table[FLIP_MODULE.flip]
            total += table[FUNCTIONALS.from_class] + table[Functionals.static]
            return functionals.flip(x) * total

        out = self.check_one_frame(fn, make_image(), FUNCTIONALS)
        self.assertEqual(out, make_image().flip(-1) * 2.0 * 10.0)

    def test_method_dict_is_its_function_dict(self):
        # A bound method forwards attribute reads to its function: its __dict__
        # is the function's (a registry may tag its kernels with attributes).
        def fn(x, functionals):
            return x * functionals.flip.__dict__["weight"] + FLIP_MODULE.flip.__dict__.get("weight", 0.0)

        Functionals.flip.weight = 3.0
        try:
            out = self.check_one_frame(fn, make_image(), FUNCTIONALS)
        finally:
            del Functionals.flip.weight
        self.assertEqual(out, make_image() * 3.0)

    def test_static_methods_through_class_and_instance(self):
        def fn(x):
            return x * METHOD_REGISTRY[FUNCTIONALS.static] + METHOD_REGISTRY[Functionals.static]

        self.check_one_frame(fn, make_image())

    def test_transform_instances_through_globals(self):
        def fn(x):
            out = BRIGHTEN(x) * METHOD_REGISTRY[BRIGHTEN]
            return out + METHOD_REGISTRY.get(DARKEN, 0.25)

        x = make_image(torch.uint8)
        self.run_sequence(fn, [(x,), (make_image(torch.uint8, seed=1),)], [1, 1])

    def test_transform_instances_made_in_graph(self):
        def fn(x):
            a, b = Brighten(1.5), Brighten(1.5)
            table = {a: 1.0, b: 2.0}
            return a(x) * table[a] + table[b], len(table), a in table, Brighten(1.0) in table

        out = self.check_one_frame(fn, make_image())
        self.assertEqual(out[1:], (2, True, False))

    def test_partial_keys(self):
        def fn(x, op):
            local = functools.partial(torch.mul, other=2.0)
            table = {local: 1.0, op: 2.0}
            return (
                op(x) * table[op]
                + table[local]
                + METHOD_REGISTRY[SCALE_PARTIAL]
                + METHOD_REGISTRY.get(local, 0.0)
            )

        x = make_image()
        self.run_sequence(fn, [(x, SCALE_PARTIAL), (make_image(seed=2), SCALE_PARTIAL)], [1, 1])

    def test_aten_overload_keys(self):
        def fn(x, overload, packet):
            table = {overload: 1.0, packet: 2.0}
            return (
                overload(x, [-1]) * table[torch.ops.aten.flip.default]
                + table[torch.ops.aten.mul]
                + METHOD_REGISTRY[overload]
                + METHOD_REGISTRY[packet]
                + METHOD_REGISTRY.get(torch.ops.aten.flip, 0.5)
            )

        x = make_image()
        self.run_sequence(
            fn,
            [
                (x, torch.ops.aten.flip.default, torch.ops.aten.mul),
                (make_image(seed=1), torch.ops.aten.flip.default, torch.ops.aten.mul),
            ],
            [1, 1],
        )

    def test_registry_key_replaced_by_argument_instance(self):
        # Same length, same key type: only which object the key is changed.
        # The dict-keys guard looks the recorded keys up, so it notices.
        def fn(x, transform):
            return x * SWAP_REGISTRY.get(transform, 0.5)

        x = make_image()
        torch._dynamo.reset()
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        self.assertSameOutput(fn(x, DARKEN), compiled(x, DARKEN))
        try:
            SWAP_REGISTRY.clear()
            SWAP_REGISTRY[DARKEN] = 4.0
            self.assertSameOutput(fn(x, DARKEN), compiled(x, DARKEN))
            self.assertEqual(compiled(x, DARKEN), x * 4.0)
            self.assertEqual(cnt.frame_count, 2)
        finally:
            SWAP_REGISTRY.clear()
            SWAP_REGISTRY[BRIGHTEN] = 2.0


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
