# Owner(s): ["module: dynamo"]
"""Kernels registered, replaced or removed after a functional was compiled.

torchvision lets users register kernels at any time.  A compiled functional
must then use the registry as it is now: exactly one recompile after each
change, never a stale kernel, and no recompile at all while the registry is
untouched.

``KernelRegistryUpdateTests`` already holds on 2.13 (the registry is guarded
through its keys and kernels) and must keep holding.

``MethodDispatcherRegistryUpdateTests`` needs the "hash and compare bound
methods like CPython" patch: the same, for a registry whose dispatcher is a
bound method rather than a module-level function.

``RegistryTruthGuardTests`` and ``RegistryLengthGuardTests`` need the "guard
only the length of a dict whose truth or len() is taken" patch: replacing the
kernel of a type the input does not dispatch to recompiles nothing.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

from tv_dispatch_model import (
    _dispatch,
    _KERNEL_REGISTRY,
    _register_kernel_internal,
    CompiledVsEagerMixin,
    horizontal_flip,
    make_image,
    register_kernel,
)
from tv_model_dispatch import Functionals


class Image(torch.Tensor):
    pass


class Mask(Image):
    pass


class Video(Image):
    pass


def flip_twice_as_bright(image):
    return image.flip(-1) * 2


def flip_dimmed(image):
    return image.flip(-1) * 0.5


def flip_shifted(image):
    return image.flip(-1) + 3


class RegistryUpdateMixin(CompiledVsEagerMixin):
    functional = staticmethod(horizontal_flip)

    def setUp(self):
        super().setUp()
        self.registry = _KERNEL_REGISTRY[self.functional]
        snapshot = dict(self.registry)

        def restore():
            self.registry.clear()
            self.registry.update(snapshot)

        self.addCleanup(restore)
        counters.clear()
        self.cnt = CompileCounter()
        self.compiled = torch.compile(self.call, backend=self.cnt, fullgraph=True)

    def call(self, inpt):
        return self.functional(inpt)

    def check_call(self, inpt, kernel, frames):
        """The compiled call equals eager and ``kernel(inpt)``, after ``frames`` frames."""
        previous = self.cnt.frame_count
        with torch._dynamo.config.patch(error_on_recompile=frames == previous):
            out = self.compiled(inpt)
        self.assertSameOutput(self.call(inpt), out)
        self.assertSameOutput(kernel(inpt), out)
        self.assertEqual(self.cnt.frame_count, frames)
        self.assertEqual(len(counters["graph_break"]), 0)

    def check_untouched(self, inputs_and_kernels, frames):
        for inpt, kernel in inputs_and_kernels:
            self.check_call(inpt, kernel, frames)


def tensor_kernel(image):
    return image.flip(-1)


class KernelRegistryUpdateTests(RegistryUpdateMixin, torch._dynamo.test_case.TestCase):
    def test_register_kernel_for_new_subclass(self):
        image = make_image().as_subclass(Image)
        self.check_call(image, tensor_kernel, 1)
        self.check_untouched([(make_image(seed=1).as_subclass(Image), tensor_kernel)], 1)

        register_kernel(self.functional, Image)(flip_twice_as_bright)
        self.check_call(image, flip_twice_as_bright, 2)
        self.check_untouched([(make_image(seed=2).as_subclass(Image), flip_twice_as_bright)], 2)

    def test_replace_kernel(self):
        register_kernel(self.functional, Image)(flip_twice_as_bright)
        image = make_image().as_subclass(Image)
        self.check_call(image, flip_twice_as_bright, 1)

        self.registry[Image] = flip_dimmed
        self.check_call(image, flip_dimmed, 2)
        self.check_untouched([(make_image(seed=3).as_subclass(Image), flip_dimmed)], 2)

        # Back to a registry an earlier graph was made for: no new frame.
        self.registry[Image] = flip_twice_as_bright
        self.check_call(image, flip_twice_as_bright, 2)

    def test_remove_kernel(self):
        register_kernel(self.functional, Image)(flip_twice_as_bright)
        image = make_image().as_subclass(Image)
        self.check_call(image, flip_twice_as_bright, 1)

        del self.registry[Image]
        self.check_call(image, tensor_kernel, 2)
        self.check_untouched([(make_image(seed=4).as_subclass(Image), tensor_kernel)], 2)

    def test_register_kernel_for_subclass_of_registered_class(self):
        register_kernel(self.functional, Image)(flip_twice_as_bright)
        mask = make_image().as_subclass(Mask)
        self.check_call(mask, flip_twice_as_bright, 1)

        register_kernel(self.functional, Mask)(flip_shifted)
        self.check_call(mask, flip_shifted, 2)
        # Image itself still gets its own kernel: a graph of its own.
        self.check_call(make_image().as_subclass(Image), flip_twice_as_bright, 3)
        self.check_untouched(
            [
                (make_image(seed=5).as_subclass(Mask), flip_shifted),
                (make_image(seed=6).as_subclass(Image), flip_twice_as_bright),
            ],
            3,
        )

    def test_untouched_registry_one_frame_per_input_type(self):
        register_kernel(self.functional, Image)(flip_twice_as_bright)
        inputs = [
            (make_image(), tensor_kernel),
            (make_image().as_subclass(Image), flip_twice_as_bright),
            (make_image().as_subclass(Mask), flip_twice_as_bright),
            (make_image().as_subclass(Video), flip_twice_as_bright),
        ]
        for frames, (inpt, kernel) in enumerate(inputs, 1):
            self.check_call(inpt, kernel, frames)
        for seed in (1, 2):
            self.check_untouched(
                [(make_image(seed=seed).as_subclass(type(inpt)), kernel) for inpt, kernel in inputs],
                len(inputs),
            )


class RegistryTruthGuardTests(RegistryUpdateMixin, torch._dynamo.test_case.TestCase):
    # _get_kernel's `if not registry:` guards the registry's length, not every
    # kernel in it: replacing the kernel of a type this input does not
    # dispatch to recompiles nothing (the "guard only the length of a dict
    # whose truth or len() is taken" patch).
    def test_replace_kernel_of_another_type(self):
        register_kernel(self.functional, Image)(flip_twice_as_bright)
        image = make_image()
        self.check_call(image, tensor_kernel, 1)

        self.registry[Image] = flip_dimmed
        self.check_call(image, tensor_kernel, 1)
        # Inputs of the replaced kernel's own type still get it.
        self.check_call(make_image().as_subclass(Image), flip_dimmed, 2)


def flip_plus_kernel_count(image):
    return horizontal_flip(image) + len(_KERNEL_REGISTRY[horizontal_flip])


class RegistryLengthGuardTests(RegistryUpdateMixin, torch._dynamo.test_case.TestCase):
    # The same for len(registry).
    def call(self, inpt):
        return flip_plus_kernel_count(inpt)

    def test_replace_kernel_of_another_type(self):
        register_kernel(self.functional, Image)(flip_twice_as_bright)
        image = make_image()
        self.check_call(image, flip_plus_kernel_count, 1)

        self.registry[Image] = flip_dimmed
        self.check_call(image, flip_plus_kernel_count, 1)
        # A kernel for a new type changes the length: seen, one recompile.
        register_kernel(self.functional, Mask)(flip_shifted)
        self.check_call(image, flip_plus_kernel_count, 2)


FUNCTIONALS = Functionals(2.0)


@_register_kernel_internal(FUNCTIONALS.flip, torch.Tensor)
def _flip_tensor(image):
    return image.flip(-1)


def dispatch_through_method(inpt):
    return _dispatch(FUNCTIONALS.flip, inpt)


class MethodDispatcherRegistryUpdateTests(RegistryUpdateMixin, torch._dynamo.test_case.TestCase):
    # The dispatcher is a bound method; each attribute read makes a new method
    # object, equal to the registry's key.
    functional = staticmethod(FUNCTIONALS.flip)

    def call(self, inpt):
        return dispatch_through_method(inpt)

    def test_register_replace_remove(self):
        image = make_image().as_subclass(Image)
        self.check_call(image, _flip_tensor, 1)
        self.check_untouched([(make_image(seed=1).as_subclass(Image), _flip_tensor)], 1)

        _register_kernel_internal(FUNCTIONALS.flip, Image)(flip_twice_as_bright)
        self.check_call(image, flip_twice_as_bright, 2)

        self.registry[Image] = flip_dimmed
        self.check_call(image, flip_dimmed, 3)
        self.check_untouched([(make_image(seed=2).as_subclass(Image), flip_dimmed)], 3)

        del self.registry[Image]
        self.check_call(image, _flip_tensor, 3)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
