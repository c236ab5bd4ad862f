# Owner(s): ["module: dynamo"]
"""The truth and length of a registry dict guard its length, not its kernels.

torchvision's ``_get_kernel`` starts with ``if not registry: raise ...``.  On
2.13 that branch, like ``len(registry)``, realizes every value of the dict and
guards each kernel, so replacing the kernel of one type recompiles every graph
that dispatched through the functional, even for inputs of another type.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter

from tv_dispatch_model import (
    _KERNEL_REGISTRY,
    CompiledVsEagerMixin,
    horizontal_flip,
    make_image,
    register_kernel,
)


class Image(torch.Tensor):
    pass


def flip_twice_as_bright(image):
    return image.flip(-1) * 2


def flip_dimmed(image):
    return image.flip(-1) * 0.5


def flip_plus_kernel_count(image):
    return horizontal_flip(image) + len(_KERNEL_REGISTRY[horizontal_flip])


class RegistryMixin(CompiledVsEagerMixin):
    def setUp(self):
        super().setUp()
        self.registry = _KERNEL_REGISTRY[horizontal_flip]
        snapshot = dict(self.registry)

        def restore():
            self.registry.clear()
            self.registry.update(snapshot)

        self.addCleanup(restore)
        register_kernel(horizontal_flip, Image)(flip_twice_as_bright)
        self.cnt = CompileCounter()

    def compile(self, fn):
        return torch.compile(fn, backend=self.cnt, fullgraph=True)


class DictTruthGuardTests(RegistryMixin, torch._dynamo.test_case.TestCase):
    def test_replacing_another_types_kernel_does_not_recompile(self):
        compiled = self.compile(horizontal_flip)
        image = make_image()
        self.assertSameOutput(horizontal_flip(image), compiled(image))
        self.registry[Image] = flip_dimmed
        with torch._dynamo.config.patch(error_on_recompile=True):
            self.assertSameOutput(horizontal_flip(image), compiled(image))
        self.assertEqual(self.cnt.frame_count, 1)

    def test_len_of_registry_does_not_guard_kernels(self):
        compiled = self.compile(flip_plus_kernel_count)
        image = make_image()
        self.assertSameOutput(flip_plus_kernel_count(image), compiled(image))
        self.registry[Image] = flip_dimmed
        with torch._dynamo.config.patch(error_on_recompile=True):
            self.assertSameOutput(flip_plus_kernel_count(image), compiled(image))
        self.assertEqual(self.cnt.frame_count, 1)


class DictTruthSoundnessTests(RegistryMixin, torch._dynamo.test_case.TestCase):
    def test_kernel_of_the_input_type_replaced(self):
        compiled = self.compile(horizontal_flip)
        image = make_image().as_subclass(Image)
        self.assertSameOutput(flip_twice_as_bright(image), compiled(image))
        self.registry[Image] = flip_dimmed
        self.assertSameOutput(flip_dimmed(image), compiled(image))

    def test_kernel_registered_later_changes_the_length(self):
        compiled = self.compile(flip_plus_kernel_count)
        image = make_image()
        self.assertSameOutput(flip_plus_kernel_count(image), compiled(image))

        class Mask(torch.Tensor):
            pass

        register_kernel(horizontal_flip, Mask)(flip_dimmed)
        self.assertSameOutput(flip_plus_kernel_count(image), compiled(image))
        mask = make_image().as_subclass(Mask)
        self.assertSameOutput(flip_plus_kernel_count(mask), compiled(mask))

    def test_emptied_registry_raises_like_eager(self):
        # Not fullgraph: on 2.13 the raise itself needs the series' exception
        # patch under fullgraph; what this checks is the length guard.
        compiled = torch.compile(horizontal_flip, backend=self.cnt)
        image = make_image()
        compiled(image)
        self.registry.clear()
        with self.assertRaisesRegex(ValueError, "No kernel registered") as eager:
            horizontal_flip(image)
        with self.assertRaisesRegex(ValueError, "No kernel registered") as got:
            compiled(image)
        self.assertEqual(str(got.exception), str(eager.exception))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
