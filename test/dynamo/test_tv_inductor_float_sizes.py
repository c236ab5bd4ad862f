# Owner(s): ["module: inductor"]
"""
Sizes computed from float math, passed to a C++ kernel once, not computed in its loops.

With the random flags, RandomResizedCrop's crop is ``int(round(math.sqrt(target_area *
aspect_ratio)))`` wide, the area and ratio the ``.item()`` of hoisted draws: unbacked
floats. Inductor's C++ kernel that copies the crop out of the image had the size in its
loop bounds and indices as ``std::lrint(std::sqrt(ks2*ks3*...))``: computed again for every
vector of every row (libm calls, errno kept, which the compiler may not hoist), from the
floats taken as ``float``, where the wrapper sizes the buffers from Python's doubles.

Each such rounding of float math over the kernel's arguments is now a precomputed size:
the wrapper computes it once per call, in Python, and passes it as an int64 argument.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounterWithBackend
from torch._inductor.utils import run_and_get_cpp_code

from test_tv_random_draws import SeededCallsMixin
from tv_model_random_draws import random_resized_crop_log_ratio


FLAGS = {"hoist_torch_rng_draws": True, "data_dependent_branches_as_cond": True}


def crop_to_224(image):
    return random_resized_crop_log_ratio(image, size=(224, 224), scale=(0.08, 1.0))


class FloatSizesTests(SeededCallsMixin, torch._dynamo.test_case.TestCase):
    def check_calls(self, compiled, images, seeds):
        """The first call's code computes the crop's sizes in the wrapper;
        every call on each image equals eager, its RNG stream after too."""
        with torch._dynamo.config.patch(**FLAGS):
            torch.manual_seed(seeds[0])
            eager = crop_to_224(images[0])
            torch.manual_seed(seeds[0])
            out, code = run_and_get_cpp_code(compiled, images[0])
            self.assertEqual(out, eager, atol=0, rtol=0)
            # no square root or rounding in any kernel; the wrapper computes
            # them, once per call
            kernels, wrapper = code.split("def call(")
            self.assertNotIn("std::sqrt", kernels)
            self.assertNotIn("std::lrint", kernels)
            self.assertIn("round(torch._sym_sqrt(", wrapper)
            for image in images:
                self.check_seeded(crop_to_224, compiled, seeds, lambda: (image,))

    def test_resized_crop_sizes_are_kernel_arguments(self):
        # other draws, other crops: the same graph
        image = torch.randint(0, 256, (3, 480, 500), dtype=torch.uint8)
        cnt = CompileCounterWithBackend("inductor")
        compiled = torch.compile(crop_to_224, backend=cnt, fullgraph=True)
        self.check_calls(compiled, [image], range(13))
        self.assertEqual(cnt.frame_count, 1)

    def test_images_of_other_sizes(self):
        # the sizes a kernel takes, computed per call from the call's draws
        # and the image's symbolic size
        images = [
            torch.randint(0, 256, shape, dtype=torch.uint8)
            for shape in ((3, 480, 500), (3, 300, 400), (3, 512, 288), (3, 257, 511))
        ]
        cnt = CompileCounterWithBackend("inductor")
        compiled = torch.compile(crop_to_224, backend=cnt, fullgraph=True, dynamic=True)
        self.check_calls(compiled, images, range(4))
        self.assertEqual(cnt.frame_count, 1)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
