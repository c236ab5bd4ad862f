# Owner(s): ["module: dynamo"]
import torch
import torch._dynamo.test_case
from torch._dynamo.testing import (
    CompileCounter,
    CompileCounterWithBackend,
    EagerAndRecordGraphs,
    normalize_gm,
)

from tv_model_random import random_horizontal_flip, seeded_calls
from tv_model_random_branches import (
    _seeded_sample,
    check_positive,
    flip_if_bright,
    random_apply_flip,
    random_flip_then_brighten,
)


COND = "data_dependent_branches_as_cond"
HOIST = "hoist_torch_rng_draws"
REASON = "could not be compiled as a torch.cond"


def dynamo_flags(*names):
    # Only the flags this build of Dynamo has: without them, a branch on a
    # tensor graph breaks.
    return {n: True for n in names if hasattr(torch._dynamo.config, n)}


def draws_after_the_branch(x):
    if torch.rand(1) >= 0.5:
        return x
    return x + torch.rand(1)


_appended = []


def side_effect_after_the_branch(x):
    if x.sum() > 0:
        _appended.append(1)
        return x + 1
    return x - 1


def unmergeable_outputs(x):
    if x.sum() > 0:
        return x
    return x.sum()


def flip_then_draw_after_a_branch(x):
    # A cond (the flip), then a branch whose rest draws again, which cond
    # refuses: it is specialized on its draw, which must still be hoisted.
    y = random_horizontal_flip(x)
    if torch.rand(1) >= 0.5:
        return y + torch.rand(1)
    return y


def closure_sees_a_store_after_the_branch(x):
    # `scale` is a cell that a function made before the branch closes over:
    # an outcome storing into a copy of it would not change what scaled reads.
    scale = 1.0

    def scaled(t):
        return t * scale

    if x.sum() > 0:
        scale = 2.0
        return scaled(x)
    return scaled(x) - 1


def graph_break_after_the_branch(x):
    if x.sum() > 0:
        torch._dynamo.graph_break()
        return x + 1
    return x - 1


class DataDependentBranchAsCondTests(torch._dynamo.test_case.TestCase):
    def check_seeded_calls(self, fn, flags, calls=100, backend=None, size=(3, 16, 20)):
        x = torch.rand(size)
        cnt = backend if backend is not None else CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        outcomes = set()
        with torch._dynamo.config.patch(error_on_recompile=True, **flags):
            for eager, eager_next, out, out_next in seeded_calls(
                fn, compiled, range(calls), lambda: (x,)
            ):
                self.assertIs(type(out), type(eager))
                self.assertEqual(out.dtype, eager.dtype)
                self.assertEqual(out.shape, eager.shape)
                self.assertEqual(out, eager, atol=0, rtol=0)
                # the RNG stream goes on as in eager
                self.assertEqual(out_next, eager_next, atol=0, rtol=0)
                outcomes.add(torch.equal(out, x))
        self.assertEqual(cnt.frame_count, 1)
        return outcomes

    def test_random_apply_branch_one_graph(self):
        outcomes = self.check_seeded_calls(random_horizontal_flip, dynamo_flags(COND))
        self.assertEqual(outcomes, {True, False})

    def test_random_apply_branch_graph(self):
        # The identity outcome returns a copy: cond outputs may not alias.
        backend = EagerAndRecordGraphs()
        with torch._dynamo.config.patch(**dynamo_flags(COND)):
            torch.compile(random_horizontal_flip, backend=backend, fullgraph=True)(
                torch.rand(3, 4, 5)
            )
        self.assertEqual(len(backend.graphs), 1)
        self.assertExpectedInline(
            normalize_gm(backend.graphs[0].print_readable(print_output=False)),
            """\
class GraphModule(torch.nn.Module):
    def forward(self, L_image_: "f32[3, 4, 5]"):
        l_image_ = L_image_

        rand: "f32[1]" = torch.rand(1)
        ge: "b8[1]" = rand >= 0.5;  rand = None
        cond_true_0 = self.cond_true_0
        cond_false_0 = self.cond_false_0
        cond = torch.ops.higher_order.cond(ge, cond_true_0, cond_false_0, (l_image_,));  ge = cond_true_0 = cond_false_0 = l_image_ = None
        getitem: "f32[3, 4, 5]" = cond[0];  cond = None
        return (getitem,)

    class cond_true_0(torch.nn.Module):
        def forward(self, l_image_: "f32[3, 4, 5]"):
            l_image__1 = l_image_

            clone: "f32[3, 4, 5]" = l_image__1.clone();  l_image__1 = None
            return (clone,)

    class cond_false_0(torch.nn.Module):
        def forward(self, l_image_: "f32[3, 4, 5]"):
            l_image__1 = l_image_

            flip: "f32[3, 4, 5]" = l_image__1.flip(-1);  l_image__1 = None
            return (flip,)
""",  # noqa: B950
        )

    def test_random_apply_branch_on_hoisted_draw_one_graph(self):
        # With the draw hoisted, the branch on it is a cond, not a
        # specialization per outcome.
        outcomes = self.check_seeded_calls(
            random_horizontal_flip, dynamo_flags(COND, HOIST)
        )
        self.assertEqual(outcomes, {True, False})

    def test_random_apply_to_a_samples_leaves_one_graph(self):
        # _RandomApplyTransform.forward: after the branch, params is stored
        # into a cell of the frame that a list comprehension reads; each
        # outcome of the cond stores into its own copy.
        (sample,) = _seeded_sample(0)
        cnt = CompileCounter()
        compiled = torch.compile(random_apply_flip, backend=cnt, fullgraph=True)
        outcomes = set()
        with torch._dynamo.config.patch(error_on_recompile=True, **dynamo_flags(COND)):
            for eager, eager_next, out, out_next in seeded_calls(
                random_apply_flip, compiled, range(20), lambda: (sample,)
            ):
                self.assertEqual([type(t) for t in out], [type(t) for t in eager])
                self.assertEqual(out, eager, atol=0, rtol=0)
                self.assertEqual(out_next, eager_next, atol=0, rtol=0)
                outcomes.add(torch.equal(out[0], sample[0]))
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(outcomes, {True, False})

    def test_draws_after_a_cond_are_still_hoisted(self):
        # Two graphs: one per outcome of the second branch; the flip is a
        # cond in both.
        x = torch.rand(3, 4, 5)
        cnt = CompileCounter()
        compiled = torch.compile(flip_then_draw_after_a_branch, backend=cnt, fullgraph=True)
        with torch._dynamo.config.patch(**dynamo_flags(COND, HOIST)):
            for eager, eager_next, out, out_next in seeded_calls(
                flip_then_draw_after_a_branch, compiled, range(12), lambda: (x,)
            ):
                self.assertEqual(out, eager, atol=0, rtol=0)
                self.assertEqual(out_next, eager_next, atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 2)

    def test_branch_in_inlined_call(self):
        self.check_seeded_calls(random_flip_then_brighten, dynamo_flags(COND))

    def test_branch_on_data(self):
        cnt = CompileCounter()
        compiled = torch.compile(flip_if_bright, backend=cnt, fullgraph=True)
        with torch._dynamo.config.patch(error_on_recompile=True, **dynamo_flags(COND)):
            for scale in (0.2, 1.0, 2.0, 0.5):
                x = torch.rand(3, 8, 10) * scale
                self.assertEqual(compiled(x), flip_if_bright(x), atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 1)

    def test_branch_on_data_returns_ints(self):
        def fn(x):
            if x.sum() > 0:
                return x + 1, 1
            return x - 1, 2

        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        with torch._dynamo.config.patch(error_on_recompile=True, **dynamo_flags(COND)):
            for sign in (1, -1, 1):
                x = torch.rand(4) * sign
                self.assertEqual(compiled(x), fn(x))
        self.assertEqual(cnt.frame_count, 1)

    def test_sequential_branches_nest(self):
        # the second branch is in both continuations of the first: nested conds
        def fn(x):
            if x.sum() > 0:
                x = x + 1
            if x.mean() > 0.6:
                return x * 2
            return x

        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        with torch._dynamo.config.patch(error_on_recompile=True, **dynamo_flags(COND)):
            for scale in (1.0, -1.0, 0.1, -0.1, 0.5):
                x = torch.rand(3, 4) * scale
                self.assertEqual(compiled(x), fn(x), atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 1)

    def test_branch_returns_dict_with_input(self):
        def fn(x):
            if x.sum() > 0:
                return {"image": x, "mask": x > 0.5}
            return {"image": x.flip(-1), "mask": x < 0.5}

        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        with torch._dynamo.config.patch(error_on_recompile=True, **dynamo_flags(COND)):
            for sign in (1, -1):
                x = torch.rand(3, 4) * sign
                out, eager = compiled(x), fn(x)
                self.assertEqual(out, eager, atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 1)

    def test_inductor_fallback_random(self):
        backend = CompileCounterWithBackend("inductor")
        with torch._inductor.config.patch(fallback_random=True):
            outcomes = self.check_seeded_calls(
                random_horizontal_flip, dynamo_flags(COND), calls=8, backend=backend,
                size=(3, 4, 5),
            )
        self.assertEqual(outcomes, {True, False})


class DataDependentBranchAsCondRefusalTests(torch._dynamo.test_case.TestCase):
    # Continuations torch.cond cannot take graph break, with the reason, and
    # are never compiled wrong.  These pass without the flag too.
    def check_refused(self, fn, make_input, reason, flags=(COND,)):
        flags = dynamo_flags(*flags)
        with torch._dynamo.config.patch(**flags):
            with self.assertRaisesRegex(
                torch._dynamo.exc.Unsupported, "Data-dependent branching"
            ) as cm:
                torch.compile(fn, backend="eager", fullgraph=True)(make_input())
            if COND in flags:
                self.assertIn(REASON, str(cm.exception))
                self.assertIn(reason, str(cm.exception))
            torch._dynamo.reset()
            compiled = torch.compile(fn, backend="eager")
            for eager, eager_next, out, out_next in seeded_calls(
                fn, compiled, range(6), lambda: (make_input(),)
            ):
                self.assertEqual(out, eager, atol=0, rtol=0)
                self.assertEqual(out_next, eager_next, atol=0, rtol=0)

    def signed_input(self):
        self._sign = -getattr(self, "_sign", 1)
        return torch.rand(3, 4) * self._sign

    def test_rng_draw_after_the_branch(self):
        self.check_refused(
            draws_after_the_branch, lambda: torch.rand(3, 4), "draws from the torch RNG"
        )

    def test_side_effect_after_the_branch(self):
        _appended.clear()
        self.check_refused(
            side_effect_after_the_branch, self.signed_input, "side effect"
        )

    def test_unmergeable_outputs(self):
        self.check_refused(
            unmergeable_outputs, self.signed_input, "When merging two branches"
        )

    def test_store_to_a_cell_a_closure_reads(self):
        self.check_refused(
            closure_sees_a_store_after_the_branch, self.signed_input, "side effect"
        )

    def test_graph_break_after_the_branch(self):
        self.check_refused(
            graph_break_after_the_branch, self.signed_input, "graph_break"
        )

    def test_exception_after_the_branch(self):
        def fn(x):
            if x.sum() < 0:
                raise ValueError("negative")
            return x + 1

        flags = dynamo_flags(COND)
        x = torch.rand(3, 4)
        with torch._dynamo.config.patch(**flags):
            with self.assertRaisesRegex(
                torch._dynamo.exc.Unsupported, "Data-dependent branching"
            ) as cm:
                torch.compile(fn, backend="eager", fullgraph=True)(x)
            if COND in flags:
                self.assertIn("raises an exception", str(cm.exception))
            torch._dynamo.reset()
            compiled = torch.compile(fn, backend="eager")
            self.assertEqual(compiled(x), fn(x))
            with self.assertRaisesRegex(ValueError, "negative"):
                compiled(-x)

    def test_assert_is_not_a_branch(self):
        # `assert tensor` still becomes torch._assert_async, in one graph.
        cnt = CompileCounter()
        with torch._dynamo.config.patch(**dynamo_flags(COND)):
            x = torch.rand(3, 4)
            compiled = torch.compile(check_positive, backend=cnt, fullgraph=True)
            self.assertEqual(compiled(x), x + 1)
        self.assertEqual(cnt.frame_count, 1)

    def test_branch_in_a_loop(self):
        # an arm returns: the arms do not meet again before the loop goes on
        def fn(x):
            for i in range(3):
                if x.sum() > i:
                    return x + i
                x = x * 2
            return x

        self.check_refused(fn, self.signed_input, "in a loop")

    def test_tensor_subclass_output(self):
        # torch.cond returns plain tensors: a subclass instance in one outcome
        # and a plain tensor in the other cannot be told apart after it
        class Sub(torch.Tensor):
            pass

        def fn(x):
            if x.sum() > 0:
                return x.as_subclass(Sub)
            return x + 1

        self.check_refused(fn, self.signed_input, "an instance of Sub and as a plain tensor")

    def test_rng_draw_after_the_branch_falls_back_to_hoisting(self):
        # Refused as a cond, the branch on a hoisted draw is specialized.
        flags = dynamo_flags(COND, HOIST)
        if HOIST not in flags:
            return self.check_refused(
                draws_after_the_branch, lambda: torch.rand(3, 4), "RNG"
            )
        cnt = CompileCounter()
        compiled = torch.compile(draws_after_the_branch, backend=cnt, fullgraph=True)
        x = torch.rand(3, 4)
        with torch._dynamo.config.patch(**flags):
            for eager, eager_next, out, out_next in seeded_calls(
                draws_after_the_branch, compiled, range(10), lambda: (x,)
            ):
                self.assertEqual(out, eager, atol=0, rtol=0)
                self.assertEqual(out_next, eager_next, atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 2)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
