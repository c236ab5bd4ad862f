# Owner(s): ["module: dynamo"]
"""Guards of torchvision-style dispatch: what tracing it installs, and that they stay sound.

A functional reaches its kernel through a global registry keyed by the
functional, then by type, found by walking ``type(inpt).__mro__``.  The same
objects (``torch.Tensor``, the ``torch`` module) are reached through several
sources: an inner dict's key, ``type(x).__mro__[0]``, another module's
globals.  Dynamo guards that every later source is the object it tracked
first.

``IdentityAliasGuardTests`` needs the "guard aliases of ID-matched objects
with ID_MATCH" patch: when one of the two sources is already ID_MATCH'd, the
aliasing guard is an ID_MATCH on the other source (a C++ leaf guard), not a
Python lambda guard run on every call after the guard tree.

``DispatchGuardSoundnessTests`` holds checks that pass on 2.13 and must keep
passing: a kernel registered or replaced after compiling is seen, and an
alias that stops holding (either side of it) fails the guard.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.eval_frame import _debug_get_cache_entry_list
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

import tv_dispatch_model
from tv_dispatch_model import (
    _KERNEL_REGISTRY,
    CompiledVsEagerMixin,
    horizontal_flip,
    make_image,
    register_kernel,
    to_dtype,
)
from tv_model_kernels import pipeline_functionals


class Key:
    pass


class OtherKey:
    pass


KEY = Key
REGISTRY = {Key: 2.0}


def two_functionals(image):
    out = horizontal_flip(image)
    return to_dtype(out, torch.float32, scale=True)


def registry_lookup(x):
    # The registry's key is tracked first (an ID_MATCH); KEY is the same
    # class reached through another source, guarded as its alias.
    return x * REGISTRY.get(KEY, -1.0)


def argument_lookup(x, key):
    return x * REGISTRY.get(key, -1.0)


class Flipped(torch.Tensor):
    """A plain tensor subclass that gets a kernel of its own after compiling."""


def guard_manager(fn):
    entries = _debug_get_cache_entry_list(fn.__code__)
    return entries[0].guard_manager


def aliasing_lambda_guards(fn):
    """Code of the Python lambda guards that test object identity."""
    parts = []
    for guard in guard_manager(fn).root.get_epilogue_lambda_guards():
        parts.extend(p for p in guard.verbose_code_parts() if " is " in p)
    return parts


def id_match_guards(fn):
    return [line for line in str(guard_manager(fn)).splitlines() if "ID_MATCH:" in line]


class IdentityAliasGuardTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_pipeline_has_no_aliasing_lambda_guards(self):
        image = make_image(torch.uint8, (3, 40, 50))
        self.check_one_frame(pipeline_functionals, image)
        self.assertEqual(aliasing_lambda_guards(pipeline_functionals), [])

    def test_registry_type_keys_are_id_matched(self):
        # torch.Tensor is reached as the key of each inner dict, as
        # type(x).__mro__[0] and as torch.Tensor; each such source is
        # ID_MATCH'd against the same class.
        self.check_one_frame(two_functionals, make_image(torch.uint8))
        self.assertEqual(aliasing_lambda_guards(two_functionals), [])
        tensor_id = str(id(torch.Tensor))
        tensor_matches = [line for line in id_match_guards(two_functionals) if f", {tensor_id})" in line]
        self.assertTrue(any("__mro__[0]" in line for line in tensor_matches), tensor_matches)
        self.assertGreaterEqual(sum("list(dict.keys(" in line for line in tensor_matches), 2, tensor_matches)

    def test_module_reached_through_two_globals(self):
        # The functionals' module reads torch through its own globals.
        self.check_one_frame(two_functionals, make_image(torch.uint8))
        matched = id_match_guards(two_functionals)
        self.assertTrue(any("G['__import_tv_dispatch_model'].torch," in line for line in matched), matched)
        self.assertEqual(aliasing_lambda_guards(two_functionals), [])

    def test_argument_aliasing_a_registry_key(self):
        # A local (the argument, CLASS_MATCH'd) and a global (the key).
        x = make_image()
        cnt = CompileCounter()
        compiled = torch.compile(argument_lookup, backend=cnt, fullgraph=True)
        self.assertEqual(compiled(x, Key), x * 2.0)
        self.assertEqual(aliasing_lambda_guards(argument_lookup), [])
        self.assertEqual(compiled(x, OtherKey), x * -1.0)
        self.assertEqual(cnt.frame_count, 2)


class DispatchGuardSoundnessTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_kernel_registered_later_for_a_subclass(self):
        def flipped_kernel(image):
            return image.flip(-2)

        self.addCleanup(_KERNEL_REGISTRY[horizontal_flip].pop, Flipped, None)
        x = make_image()
        cnt = CompileCounter()
        compiled = torch.compile(horizontal_flip, backend=cnt, fullgraph=True)
        self.assertSameOutput(horizontal_flip(x), compiled(x))
        self.assertSameOutput(horizontal_flip(x.as_subclass(Flipped)), compiled(x.as_subclass(Flipped)))
        register_kernel(horizontal_flip, Flipped)(flipped_kernel)
        eager = horizontal_flip(x.as_subclass(Flipped))
        self.assertEqual(eager, x.flip(-2))
        self.assertSameOutput(eager, compiled(x.as_subclass(Flipped)))
        # Plain tensors still get the plain-tensor kernel.
        self.assertSameOutput(horizontal_flip(make_image(seed=1)), compiled(make_image(seed=1)))

    def test_kernel_replaced_after_compiling(self):
        registry = _KERNEL_REGISTRY[horizontal_flip]
        original = registry[torch.Tensor]
        self.addCleanup(registry.__setitem__, torch.Tensor, original)
        x = make_image()
        compiled = torch.compile(two_functionals, backend="eager", fullgraph=True)
        self.assertSameOutput(two_functionals(x), compiled(x))
        registry[torch.Tensor] = lambda image: image.flip(-2)
        self.assertSameOutput(two_functionals(x), compiled(x))
        self.assertEqual(compiled(x), x.flip(-2))

    def test_alias_no_longer_the_tracked_object(self):
        # KEY (the aliasing source) is rebound; the registry is unchanged.
        global KEY
        x = make_image()
        counters.clear()
        cnt = CompileCounter()
        compiled = torch.compile(registry_lookup, backend=cnt, fullgraph=True)
        self.assertEqual(compiled(x), x * 2.0)
        self.addCleanup(globals().__setitem__, "KEY", Key)
        KEY = OtherKey
        self.assertEqual(registry_lookup(x), x * -1.0)
        self.assertEqual(compiled(x), x * -1.0)
        self.assertEqual(cnt.frame_count, 2)
        self.assertEqual(len(counters["graph_break"]), 0)

    def test_registry_key_no_longer_the_tracked_object(self):
        # KEY stays Key; the registry's key changes.
        x = make_image()
        counters.clear()
        cnt = CompileCounter()
        compiled = torch.compile(registry_lookup, backend=cnt, fullgraph=True)
        self.assertEqual(compiled(x), x * 2.0)
        self.addCleanup(REGISTRY.__setitem__, Key, 2.0)
        self.addCleanup(REGISTRY.clear)
        REGISTRY.clear()
        REGISTRY[OtherKey] = 2.0
        self.assertEqual(registry_lookup(x), x * -1.0)
        self.assertEqual(compiled(x), x * -1.0)
        self.assertEqual(cnt.frame_count, 2)
        self.assertEqual(len(counters["graph_break"]), 0)

    def test_module_alias_rebound(self):
        # The model module's torch global is an alias of this module's torch.
        x = make_image(torch.uint8)
        cnt = CompileCounter()
        compiled = torch.compile(two_functionals, backend=cnt, fullgraph=True)
        self.assertSameOutput(two_functionals(x), compiled(x))

        class TorchProxy:
            def __getattr__(self, name):
                return getattr(torch, name)

        self.addCleanup(setattr, tv_dispatch_model, "torch", torch)
        tv_dispatch_model.torch = TorchProxy()
        self.assertSameOutput(two_functionals(x), compiled(x))
        self.assertEqual(cnt.frame_count, 2)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
