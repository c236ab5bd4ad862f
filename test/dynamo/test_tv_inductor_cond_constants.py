# Owner(s): ["module: inductor"]
"""A tensor constant made inside a torch.cond branch, compiled by Inductor.

torchvision's RandomAdjustSharpness builds its 3x3 smoothing kernel with
``torch.tensor`` in ``adjust_sharpness``; with the random flags, the rest of
``_RandomApplyTransform.forward`` after its p-gate is a cond (patch 41), so the
kernel is a constant of a branch. Inductor registered such a constant only in the
subgraph's lowering, the generated module took its constants from the root graph,
and the branch's kernel was called with None ("_torchinductor_pyobject_tensor_data_ptr:
non-tensor input").
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounterWithBackend


def _sharpen(x):
    kernel = torch.tensor([[1.0, 1.0, 1.0], [1.0, 5.0, 1.0], [1.0, 1.0, 1.0]]) / 13
    weight = kernel.expand(x.shape[0], 1, 3, 3)
    return torch.nn.functional.conv2d(x.unsqueeze(0), weight, groups=x.shape[0], padding=1).squeeze(0)


def sharpen_if_bright(x):
    return torch.cond(x.mean() > 0.5, _sharpen, torch.clone, (x,))


def _nested(x):
    return torch.cond(x.sum() > 0, _sharpen, torch.neg, (x,))


def nested_sharpen(x):
    return torch.cond(x.mean() > 0.5, _nested, torch.clone, (x,))


class CondBranchConstantsTests(torch._dynamo.test_case.TestCase):
    def check(self, fn):
        cnt = CompileCounterWithBackend("inductor")
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        bright, dark = torch.rand(3, 8, 9) * 0.5 + 0.5, torch.rand(3, 8, 9) * 0.5
        for x in (bright, dark, bright):
            self.assertEqual(compiled(x), fn(x))
        self.assertEqual(cnt.frame_count, 1)

    def test_constant_in_a_branch(self):
        self.check(sharpen_if_bright)

    def test_constant_in_a_nested_branch(self):
        self.check(nested_sharpen)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
