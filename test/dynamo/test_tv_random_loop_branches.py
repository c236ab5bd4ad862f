# Owner(s): ["module: dynamo"]
"""A data-dependent branch inside a loop, compiled as a torch.cond over its two arms.

torchvision's ColorJitter applies its ops in a drawn order, ``for fn_id in
torch.randperm(4): if fn_id == 0: ... elif fn_id == 1: ...``. With
``data_dependent_branches_as_cond`` a branch became a cond over the rest of the frame,
but not in a loop (each iteration would nest another cond), so with
``hoist_torch_rng_draws`` the loop compiled one graph per drawn order (up to 24, past the
recompile limit) and without it every branch was a graph break. The arms of an if/elif
chain meet again, at the chain's end or at the loop head they jump back to: the branch is
now a cond over the arms up to there, returning the locals they write that are read
after it, and tracing goes on from where they meet.

Every call is compared with eager from the same seed: output, and the next draw after it.
"""

from unittest import mock

import torch
import torch._dynamo.test_case
from torch._dynamo.symbolic_convert import SpeculationLog
from torch._dynamo.testing import (
    CompileCounter,
    CompileCounterWithBackend,
    EagerAndRecordGraphs,
)

from test_tv_random_draws import SeededCallsMixin
from tv_model_random_draws import color_jitter


def signed_steps(x, steps):
    # a branch on data in a loop; `scaled` is written by one arm and dead at the join
    for step in steps:
        if step.sum() > 0:
            scaled = step * 2
            x = x + scaled
        else:
            x = x - step
    return x


def first_match(x, ops):
    # an if/elif/else chain on data in a loop: the arms jump back to the loop head
    for op in ops:
        if op.sum() > 1:
            x = x * op
        elif op.sum() > 0:
            x = x + op
        else:
            x = x.flip(-1)
    return x


def noisy_steps(x):
    # an arm that draws: no cond over the arms (eager's draw order), in every iteration
    for _ in range(6):
        if torch.rand(1) < 0.5:
            x = x + torch.rand(1)
    return x


def leave_by_an_exception(x, steps):
    # the jumps say the arms meet after the if; the handler breaks out of the loop
    for step in steps:
        if step.sum() > 0:
            try:
                x = x + int("not a number")
            except ValueError:
                break
        x = x + step
    return x


def color_jitter_twice(image):
    # the second call draws after the first call's conds, elifs nested in them
    return color_jitter(color_jitter(image))


def stop_at_negative(x, steps):
    # `break`: the arms do not meet again before the loop goes on
    for step in steps:
        if step.sum() < 0:
            break
        x = x + step
    return x


_BOTH_FLAGS = {"hoist_torch_rng_draws": True, "data_dependent_branches_as_cond": True}


def _compiled(fn, backend):
    return torch.compile(fn, backend=backend, fullgraph=True)


class LoopBranchAsCondTests(SeededCallsMixin, torch._dynamo.test_case.TestCase):
    @torch._dynamo.config.patch(**_BOTH_FLAGS, recompile_limit=24)
    def test_branch_on_randperm_order_is_one_graph(self):
        x = torch.rand(3, 16, 20)
        # 12 seeds draw 6 orders of the two ops the branches tell apart
        self.assertEqual(self.graphs_for_seeded_calls(color_jitter, range(12), lambda: (x,)), 1)

    @torch._dynamo.config.patch(**_BOTH_FLAGS, recompile_limit=24)
    def test_branch_on_randperm_order_on_inductor(self):
        x = torch.rand(3, 16, 20)
        cnt = CompileCounterWithBackend("inductor")
        compiled = _compiled(color_jitter, cnt)
        self.check_seeded(color_jitter, compiled, range(6), lambda: (x,), atol=1e-5, rtol=1e-5)
        self.assertEqual(cnt.frame_count, 1)

    @torch._dynamo.config.patch(**_BOTH_FLAGS)
    def test_draws_after_nested_conds_are_still_hoisted(self):
        # A cond made inside a branch (an elif's) marked the RNG as used in the
        # graph, so the later draws were traced into it: on Inductor, with its own
        # generator, not eager's stream.
        backend = EagerAndRecordGraphs()
        x = torch.rand(3, 16, 20)
        self.check_seeded(color_jitter_twice, _compiled(color_jitter_twice, backend), range(4), lambda: (x,))
        self.assertEqual(len(backend.graphs), 1)
        nodes = backend.graphs[0].graph.nodes
        self.assertEqual([n for n in nodes if n.target in (torch.randperm, "uniform_")], [])
        # each call's order and two factors, drawn by the prologue
        hoisted = [n for n in nodes if n.op == "placeholder" and n.name.startswith("torch_random")]
        self.assertEqual(len(hoisted), 6)

    @torch._dynamo.config.patch(**_BOTH_FLAGS, recompile_limit=64)
    def test_a_refused_arm_is_traced_in_one_iteration_only(self):
        # The first iteration's cond fails (its arm draws) and the analysis restarts;
        # the later iterations take the usual path (a branch specialized on the draw)
        # without tracing their arms and restarting again, once per iteration.
        x = torch.zeros(3)
        with mock.patch.object(
            SpeculationLog,
            "restart",
            autospec=True,
            side_effect=SpeculationLog.restart,
        ) as restart:
            self.check_seeded(noisy_steps, _compiled(noisy_steps, "eager"), range(1), lambda: (x,))
        self.assertLessEqual(restart.call_count, 3)

    def count_conds(self, fn, *args):
        backend = EagerAndRecordGraphs()
        self.assertEqual(_compiled(fn, backend)(*args), fn(*args))
        self.assertEqual(len(backend.graphs), 1)
        return sum(
            len(g.graph.find_nodes(op="call_function", target=torch.ops.higher_order.cond))
            for g in backend.graphs[0].modules()
            if isinstance(g, torch.fx.GraphModule)
        )

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_if_else_in_a_loop_is_a_cond_per_iteration(self):
        x = torch.rand(2, 3)
        steps = [torch.rand(2, 3) - 0.5 for _ in range(3)]
        for flipped in (steps, [-s for s in steps]):
            # one cond per iteration, none nested in another
            self.assertEqual(self.count_conds(signed_steps, x, flipped), 3)

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_elif_chain_in_a_loop_nests_one_cond_per_test(self):
        x = torch.rand(2, 3)
        ops = [torch.full((2, 3), v) for v in (1.0, 0.1, -1.0)]
        # each iteration: a cond, and in its false arm the elif's cond
        self.assertEqual(self.count_conds(first_match, x, ops), 6)

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_break_out_of_the_loop_is_refused(self):
        x = torch.rand(2, 3)
        steps = [torch.rand(2, 3), -torch.rand(2, 3), torch.rand(2, 3)]
        with self.assertRaisesRegex(
            torch._dynamo.exc.Unsupported, "do not meet again before the loop goes on"
        ):
            torch.compile(stop_at_negative, backend="eager", fullgraph=True)(x, steps)
        torch._dynamo.reset()
        # without fullgraph, a graph break in a loop: the frame runs eagerly
        compiled = torch.compile(stop_at_negative, backend=CompileCounter())
        self.assertEqual(compiled(x, steps), stop_at_negative(x, steps))

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_arm_leaving_the_loop_through_a_handler_is_refused(self):
        x = torch.rand(2, 3)
        steps = [-torch.rand(2, 3), torch.rand(2, 3), torch.rand(2, 3)]
        with self.assertRaisesRegex(
            torch._dynamo.exc.Unsupported, "leaves the loop without meeting the other arm"
        ):
            torch.compile(leave_by_an_exception, backend="eager", fullgraph=True)(x, steps)
        torch._dynamo.reset()
        compiled = torch.compile(leave_by_an_exception, backend="eager")
        self.assertEqual(compiled(x, steps), leave_by_an_exception(x, steps))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
