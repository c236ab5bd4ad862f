# Owner(s): ["module: dynamo"]
"""In-place ops on tensor subclasses, as torchvision's erase kernel applies them to TVTensors.

``SubclassInplaceTests`` covers what Dynamo gets wrong without the "keep a
tensor subclass's type across in-place ops" patch: after an in-place op with a
tensor argument (``image[..., i:i + h, j:j + w] = v``), Dynamo re-derived the
subclass instance's attributes from its plain fake tensor and turned it into a
``torch.Tensor``.  ``type(image)`` was then wrong inside the compiled function,
and a new subclass tensor returned from it was rebuilt with a reference to a
never-installed global (``NameError: name '__subclass_Tensor_...' is not
defined``).  Both a plain subclass and one whose ``__torch_function__`` runs
the op with subclass dispatch disabled (like a TVTensor) are covered.

``SubclassInplaceRegressionTests`` holds controls that compile correctly
without the patch.
"""

import torch
import torch._dynamo.test_case

from tv_dispatch_model import CompiledVsEagerMixin
from tv_model_errors import (
    erase,
    erase_and_report_type,
    erase_image,
    erase_inputs,
    PlainImage,
    TVImage,
)


class InplaceCheckMixin(CompiledVsEagerMixin):
    def check_inplace(self, fn, make_args):
        """Compiled ``fn`` returns what eager returns and leaves its inputs as eager does."""
        eager_args, compiled_args = make_args(), make_args()
        out = self.check_one_frame_with(fn, eager_args, compiled_args)
        for e, c in zip(eager_args, compiled_args):
            self.assertIs(type(c), type(e))
            if isinstance(e, torch.Tensor):
                self.assertEqual(c.as_subclass(torch.Tensor), e.as_subclass(torch.Tensor))
        return out

    def check_one_frame_with(self, fn, eager_args, compiled_args):
        # check_one_frame, with separate (mutable) arguments for each run.
        torch._dynamo.reset()
        cnt = torch._dynamo.testing.CompileCounter()
        eager = fn(*eager_args)
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)(*compiled_args)
        self.assertSameOutput(eager, compiled)
        self.assertEqual(cnt.frame_count, 1)
        return compiled


class SubclassInplaceTests(InplaceCheckMixin, torch._dynamo.test_case.TestCase):
    def test_erase_copy_returns_subclass(self):
        out = self.check_inplace(erase_image, lambda: (*erase_inputs(PlainImage), False))
        self.assertIs(type(out), PlainImage)

    def test_erase_in_place_keeps_type(self):
        for cls in (PlainImage, TVImage):
            with self.subTest(cls=cls.__name__):
                name, same, out = self.check_inplace(erase_and_report_type, lambda: erase_inputs(cls))
                self.assertEqual((name, same), (cls.__name__, True))
                self.assertIs(type(out), cls)

    def test_erase_in_place_on_new_subclass_tensor(self):
        def fn(image, i, j, h, w, v):
            out = image.clone()
            erase(out, i, j, h, w, v, inplace=True)
            return out, type(out)

        out, cls = self.check_inplace(fn, lambda: erase_inputs(PlainImage, v_shape=(3, 5, 7)))
        self.assertIs(cls, PlainImage)

    def test_isinstance_after_inplace_op(self):
        def fn(image, v):
            image.mul_(v)
            if isinstance(image, PlainImage):
                return image + 1
            return image - 1

        self.check_inplace(fn, lambda: (torch.ones(2, 3).as_subclass(PlainImage), torch.tensor(2.0)))


class SubclassInplaceRegressionTests(InplaceCheckMixin, torch._dynamo.test_case.TestCase):
    def test_erase_in_place_returns_input(self):
        for cls in (torch.Tensor, PlainImage, TVImage):
            with self.subTest(cls=cls.__name__):
                self.check_inplace(erase_image, lambda: (*erase_inputs(cls), True))

    def test_erase_scalar_value(self):
        def fn(image):
            return erase_image(image, 1, 2, 3, 4, 0.5, inplace=False)

        self.check_inplace(fn, lambda: (erase_inputs(PlainImage)[0],))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
