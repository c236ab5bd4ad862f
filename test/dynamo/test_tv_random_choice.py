# Owner(s): ["module: dynamo"]
import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter

from tv_model_random import rand_augment_choice, seeded_calls


def flip_if_positive_sum(x):
    if x.sum().item() > 0:
        return x.flip(-1)
    return x * 2


class UnbackedSymBoolBranchAsCondTests(torch._dynamo.test_case.TestCase):
    def test_random_choice_one_graph(self):
        # RandAugment's `op = int(torch.randint(...))` then `if op == 0: ...`:
        # with the draw hoisted, op is an unbacked SymInt and each comparison
        # becomes a cond, so one graph serves every op.
        x = torch.rand(3, 16, 20)
        cnt = CompileCounter()
        compiled = torch.compile(rand_augment_choice, backend=cnt, fullgraph=True)
        ops = set()
        with torch._dynamo.config.patch(
            hoist_torch_rng_draws=True,
            data_dependent_branches_as_cond=True,
            error_on_recompile=True,
        ):
            for seed in range(60):
                torch.manual_seed(seed)
                ops.add(int(torch.randint(3, (1,))))
            for eager, eager_next, out, out_next in seeded_calls(
                rand_augment_choice, compiled, range(60), lambda: (x,)
            ):
                self.assertEqual(out, eager, atol=0, rtol=0, exact_dtype=True)
                self.assertEqual(out_next, eager_next, atol=0, rtol=0)
        self.assertEqual(ops, {0, 1, 2})
        self.assertEqual(cnt.frame_count, 1)

    def test_branch_on_item_comparison(self):
        # Not random at all: a comparison of an .item() (capture_scalar_outputs)
        # is an unbacked SymBool; both outcomes run in one graph.
        cnt = CompileCounter()
        compiled = torch.compile(flip_if_positive_sum, backend=cnt, fullgraph=True)
        with torch._dynamo.config.patch(
            data_dependent_branches_as_cond=True,
            capture_scalar_outputs=True,
            error_on_recompile=True,
        ):
            for x in (torch.rand(3, 4), -torch.rand(3, 4), torch.rand(3, 4) - 0.5):
                self.assertEqual(compiled(x), flip_if_positive_sum(x), atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 1)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
