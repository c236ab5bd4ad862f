# Owner(s): ["module: higher order operators"]
"""A torch.cond whose branches read a float the graph computed.

torchvision's ColorJitter passes a drawn factor, ``float(torch.empty(1).uniform_(a, b))``,
to the kernel of each of its ops; compiled, the factor is an unbacked SymFloat, and once
the choice of op is a torch.cond, the branches read it. Dynamo lifts the SymFloat into
the cond's operands as it lifts a SymInt, and cond refused it ("can only be of (Tensor,
int, SymInt)"), as did its eager implementation the float it becomes, and its autograd
helpers. Here ``.item()`` under ``capture_scalar_outputs`` makes the SymFloat; each case
is compiled fullgraph and compared with eager for both outcomes of the predicate.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounterWithBackend
from torch.testing._internal.common_utils import (
    instantiate_parametrized_tests,
    parametrize,
)


def scale_or_shift(x, s):
    v = s.item()
    return torch.cond(x.sum() > 0, lambda x: x * v, lambda x: x + v, (x,))


def blend_if_bright(x, s):
    # ColorJitter's brightness: blend with black by a drawn factor, clamped
    v = s.item()

    def blend(x):
        return (x * v).clamp(0, 1)

    return torch.cond(x.mean() > 0.5, blend, torch.clone, (x,))


class CondFloatOperandTests(torch._dynamo.test_case.TestCase):
    def check(self, fn, backend, requires_grad=False):
        cnt = CompileCounterWithBackend(backend)
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        s = torch.tensor(0.75)
        bright = torch.rand(3, 4, 5) * 0.5 + 0.5
        for x in (bright, -bright, bright):
            x_eager = x.clone().requires_grad_(requires_grad)
            x_compiled = x.clone().requires_grad_(requires_grad)
            with torch._dynamo.config.patch(capture_scalar_outputs=True):
                out = compiled(x_compiled, s)
            expected = fn(x_eager, s)
            self.assertEqual(out, expected)
            if requires_grad:
                out.sum().backward()
                expected.sum().backward()
                self.assertEqual(x_compiled.grad, x_eager.grad)
        self.assertEqual(cnt.frame_count, 1)

    @parametrize("backend", ["eager", "aot_eager", "inductor"])
    def test_branches_read_an_item(self, backend):
        self.check(scale_or_shift, backend)

    @parametrize("backend", ["eager", "aot_eager", "inductor"])
    def test_branch_blends_by_an_item(self, backend):
        self.check(blend_if_bright, backend)

    @parametrize("backend", ["aot_eager", "inductor"])
    def test_gradient_through_a_float_operand(self, backend):
        self.check(scale_or_shift, backend, requires_grad=True)

    def test_cond_op_takes_a_float_operand(self):
        # the dense implementation, called as the eager run of a compiled cond calls it
        x = torch.arange(4.0)
        for pred in (torch.tensor(True), torch.tensor(False)):
            out = torch.ops.higher_order.cond(
                pred, lambda x, v: x * v, lambda x, v: x + v, (x, 2.5)
            )
            self.assertEqual(out, x * 2.5 if pred else x + 2.5)


instantiate_parametrized_tests(CondFloatOperandTests)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
