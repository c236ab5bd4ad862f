# Owner(s): ["module: dynamo"]
"""Constants that both branches of a torch.cond return, kept out of its outputs.

``_RandomApplyTransform.forward`` returns the whole sample in both outcomes of its p-gate,
and a sample holds Python constants beside its tensors (a label, a name, None). With
``data_dependent_branches_as_cond`` the rest of forward is a cond over both outcomes, so
those constants were outputs of the cond: Inductor's lowering of cond takes tensor outputs
only ("'ShapeAsConstantBuffer' object has no attribute 'dtype'"), and Dynamo refused a
constant that is not an int ("Constants returned from branches must be ints"). The same
holds for a user's ``torch.cond`` whose branches return, say, ``(x + 1, 3)`` and
``(x - 1, 3)``.

A constant that both branches return in the same place is now no output of the cond: the
caller gets it back as it is. Where the branches' constants differ (``1`` and ``2``), they
are outputs of the cond as before.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounterWithBackend, EagerAndRecordGraphs, normalize_gm


def same_int(x):
    return torch.cond(x.sum() > 0, lambda x: (x + 1, 3), lambda x: (x - 1, 3), (x,))


def same_none_and_str(x):
    return torch.cond(x.sum() > 0, lambda x: (x + 1, None, "s"), lambda x: (x - 1, None, "s"), (x,))


def different_ints(x):
    return torch.cond(x.sum() > 0, lambda x: (x + 1, 1), lambda x: (x - 1, 2), (x,))


def sample_or_flipped(image, label):
    # the rest of the frame after a data-dependent branch, as torchvision's p-gate
    if image.mean() > 0.5:
        return image, {"label": label, "name": "sample"}
    return image.flip(-1), {"label": label, "name": "sample"}


def _inputs():
    return torch.rand(3, 4) + 0.1, -torch.rand(3, 4) - 0.1


class CondConstantOutputsTests(torch._dynamo.test_case.TestCase):
    def check(self, fn, backend, *extra):
        cnt = CompileCounterWithBackend(backend)
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        for x in _inputs():
            self.assertEqual(compiled(x, *extra), fn(x, *extra))
        self.assertEqual(cnt.frame_count, 1)

    def test_same_int_on_inductor(self):
        self.check(same_int, "inductor")

    def test_same_none_and_str(self):
        for backend in ("eager", "inductor"):
            self.check(same_none_and_str, backend)
            torch._dynamo.reset()

    def test_same_int_is_no_output_of_the_cond(self):
        backend = EagerAndRecordGraphs()
        torch.compile(same_int, backend=backend, fullgraph=True)(torch.rand(3, 4))
        (graph,) = backend.graphs
        self.assertExpectedInline(
            normalize_gm(graph.cond_true_0.print_readable(print_output=False)),
            """\
class GraphModule(torch.nn.Module):
    def forward(self, l_x_: "f32[3, 4]"):
        l_x__1 = l_x_

        child: "f32[3, 4]" = l_x__1 + 1;  l_x__1 = None
        return (child,)
""",
        )

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_rest_of_frame_returning_a_sample_with_constants_on_inductor(self):
        self.check(sample_or_flipped, "inductor", 7)


class CondDifferentConstantsTests(torch._dynamo.test_case.TestCase):
    # Passes on the base too: constants that differ stay outputs of the cond.
    def test_different_ints_are_still_outputs(self):
        backend = EagerAndRecordGraphs()
        compiled = torch.compile(different_ints, backend=backend, fullgraph=True)
        for x in _inputs():
            self.assertEqual(compiled(x), different_ints(x))
        self.assertEqual(len(backend.graphs), 1)
        out = backend.graphs[0].cond_true_0.graph.output_node().args[0]
        self.assertEqual(out[1], 1)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
