# Owner(s): ["module: dynamo"]
"""Questions about hoisted torch RNG draws, answered by replaying the draws.

With ``hoist_torch_rng_draws``, the ``.item()`` of a hoisted draw is an unbacked
symbol. A question the program then asks about it (RandomResizedCrop's
``0 < w <= width``, the bounds of a slice at a drawn offset, the size check of a
tensor whose size was drawn) is answered from the value drawn while tracing, and the
guard draws again on each call (on a copy of the RNG state) and checks the answers:
one graph per outcome, where tracing used to restart with the draws specialized, one
graph per value. A draw whose arguments are computed from earlier draws and from
input sizes (``torch.randint(0, height - h + 1, ...)``) is hoisted too; the prologue
and the guard read the sizes from the inputs of the call.

Every call is compared with eager from the same seed: output, and the next draw.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter, CompileCounterWithBackend
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.overrides import TorchFunctionMode

from tv_model_random import seeded_calls
from tv_model_random_draws import (
    IOU_BOXES,
    IOU_OPTIONS,
    random_erasing,
    random_iou_crop,
    random_resized_crop_log_ratio,
    random_shortest_size,
)
from tv_model_random_params import factor_then_branch


def _crop_half(x):
    # RandomCrop's offsets, bounded by the input's size.
    height, width = x.shape[-2:]
    h, w = height // 2, width // 2
    i = torch.randint(0, height - h + 1, size=(1,)).item()
    j = torch.randint(0, width - w + 1, size=(1,)).item()
    return x[..., i : i + h, j : j + w]


def _drawn_width_if_it_fits(x):
    # The outcome depends on the draw and on the input's size.
    w = torch.randint(1, 40, (1,)).item()
    if w <= x.shape[-1]:
        return x[..., :w] * 2
    return x


def _offset_after_a_count(x):
    # On calls that draw n == 0, the graph traced with n > 0 would draw
    # randint(0, 0), which raises: eager never makes that draw.
    n = torch.randint(0, 3, (1,)).item()
    if n > 0:
        return x + torch.randint(0, n, (1,)).item()
    return x


def _drawn_size(x):
    # Up to twice the input's size: each bound fails on about half the draws.
    height, width = x.shape[-2:]
    return torch.randint(0, 2 * width, (1,)).item(), torch.randint(0, 2 * height, (1,)).item()


def _first_fit_and(x):
    # rejection sampling: draw until both fit
    height, width = x.shape[-2:]
    while True:
        w, h = _drawn_size(x)
        if 0 < w <= width and 0 < h <= height:
            return x * w + h


def _first_fit_or(x):
    height, width = x.shape[-2:]
    w, h = _drawn_size(x)
    while w <= 0 or w > width or h <= 0 or h > height:
        w, h = _drawn_size(x)
    return x * w + h


def _first_fit_not_and(x):
    # `not (a and b)`: the first jump goes to where the last falls through
    height, width = x.shape[-2:]
    w, h = _drawn_size(x)
    while not (0 < w <= width and 0 < h <= height):
        w, h = _drawn_size(x)
    return x * w + h


def _fits(n, bound):
    return 0 < n <= bound


def _first_fit_through_a_call(x):
    # a call between the comparisons: each is a decision of its own
    height, width = x.shape[-2:]
    while True:
        w, h = _drawn_size(x)
        if 0 < w <= width and _fits(h, height):
            return x * w + h


def _first_fit_with_a_division(x):
    # `width // w` would divide by zero where `0 < w` is false: not combined
    height, width = x.shape[-2:]
    while True:
        w, h = _drawn_size(x)
        if 0 < w and width // w >= 1 and 0 < h <= height:
            return x * w + h


def _first_fit_within(x, attempts=10):
    # torchvision's searches: a bounded number of attempts, then a fallback
    height, width = x.shape[-2:]
    for _ in range(attempts):
        w, h = _drawn_size(x)
        if 0 < w <= width and 0 < h <= height:
            return x * w + h
    return x


def _first_fit_within_3(x):
    return _first_fit_within(x, 3)


def _first_fit_growing(x):
    # each attempt draws from a wider range: the attempts differ
    height, width = x.shape[-2:]
    for attempt in range(3):
        w = torch.randint(0, width + 2 * attempt + 2, (1,)).item()
        if w <= width:
            return x * w
    return x


def _first_fit_counted(x):
    # each attempt is recorded in a list the result reads
    height, width = x.shape[-2:]
    tried = []
    for _ in range(3):
        w, h = _drawn_size(x)
        tried.append(w)
        if 0 < w <= width and 0 < h <= height:
            break
    return x * len(tried)


def _first_fit_one_bound_at_a_time(x):
    # the first check's way on reaches the loop again through the second:
    # the loop's attempts left depend on how many the first took
    height, width = x.shape[-2:]
    for _ in range(3):
        w, h = _drawn_size(x)
        if not 0 < w <= width:
            continue
        if not 0 < h <= height:
            continue
        return x * w + h
    return x


class _CountDraws(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.draws = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.draws += getattr(func, "__name__", "") in ("uniform_", "randint")
        return func(*args, **(kwargs or {}))


def _draws_per_seed(fn, seeds, make_args):
    """How many torch RNG draws eager makes from each seed: the path it takes."""
    paths = set()
    for seed in seeds:
        torch.manual_seed(seed)
        with _CountDraws() as mode:
            fn(*make_args())
        paths.add(mode.draws)
    return paths


class ReplayedDecisionsMixin:
    def check_calls(self, fn, compiled, seeds, make_args, **tolerance):
        """Each seeded call of compiled gives eager's output, and leaves the
        RNG stream where eager leaves it."""
        tolerance = tolerance or {"atol": 0, "rtol": 0}
        for eager, eager_next, out, out_next in seeded_calls(fn, compiled, seeds, make_args):
            self.assertEqual(type(out), type(eager))
            self.assertEqual(out, eager, exact_dtype=True, **tolerance)
            self.assertEqual(out_next, eager_next, atol=0, rtol=0)

    def graphs(self, fn, seeds, make_args, backend=None, fullgraph=True, **tolerance):
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=backend or cnt, fullgraph=fullgraph)
        self.check_calls(fn, compiled, seeds, make_args, **tolerance)
        return cnt.frame_count


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, data_dependent_branches_as_cond=True, recompile_limit=64)
class ReplayedDecisionsTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    def test_branch_on_factor(self):
        signs = set()
        for seed in range(12):
            torch.manual_seed(seed)
            signs.add(float(torch.empty(1).uniform_(-0.5, 1.5)) < 0)
        self.assertEqual(signs, {False, True})
        # one graph per outcome, not one per value
        self.assertEqual(self.graphs(factor_then_branch, range(12), lambda: (torch.rand(3, 4, 5),)), 2)

    def test_resized_crop_search(self):
        # torchvision's RandomResizedCrop: up to 10 attempts, each drawing a
        # scale and a ratio, then two offsets bounded by the crop drawn. The
        # crop is in bounds on the first attempt for most seeds, on a later
        # one for a few, in either orientation: one graph, since the prologue
        # draws the attempts again until one fits and resize's `short, long`
        # of the crop is a sym_ite.
        x = torch.rand(3, 16, 20)
        paths = _draws_per_seed(random_resized_crop_log_ratio, range(20), lambda: (x,))
        self.assertGreater(len(paths), 1)
        self.assertLess(max(paths), 20)  # every search finds a crop
        self.assertEqual(self.graphs(random_resized_crop_log_ratio, range(20), lambda: (x,)), 1)

    def test_erasing_search(self):
        # A narrow image, where some attempts do not fit and some searches
        # find none: one graph for the searches that erase, whichever attempt
        # fits, and one for those that return the image.
        x = torch.rand(3, 6, 30)
        paths = _draws_per_seed(random_erasing, range(20), lambda: (x,))
        ways = set()
        for seed in range(20):
            torch.manual_seed(seed)
            ways.add(torch.equal(random_erasing(x), x))
        self.assertGreater(len(paths), len(ways))
        self.assertEqual(self.graphs(random_erasing, range(20), lambda: (x,)), len(ways))

    def test_draw_the_other_path_would_not_make(self):
        counts = set()
        for seed in range(10):
            torch.manual_seed(seed)
            counts.add(int(torch.randint(0, 3, (1,))))
        self.assertEqual(counts, {0, 1, 2})
        # the guard of the n > 0 graph fails on the n == 0 calls, without raising
        self.assertEqual(self.graphs(_offset_after_a_count, range(10), lambda: (torch.rand(4),)), 2)

    def test_offsets_bounded_by_dynamic_sizes(self):
        def make(height, width):
            x = torch.rand(3, height, width)
            torch._dynamo.mark_dynamic(x, 1)
            torch._dynamo.mark_dynamic(x, 2)
            return x

        cnt = CompileCounter()
        compiled = torch.compile(_crop_half, backend=cnt, fullgraph=True)

        def check(k, height, width):
            x = make(height, width)
            self.check_calls(_crop_half, compiled, range(k, k + 3), lambda: (x,))

        check(0, 16, 20)
        # the offsets are drawn by the prologue from the sizes of each call
        with torch._dynamo.config.patch(error_on_recompile=True):
            for k, (height, width) in enumerate([(17, 23), (30, 18), (21, 21)], 1):
                check(k, height, width)
        self.assertEqual(cnt.frame_count, 1)

    def test_guard_reads_the_sizes_of_the_call(self):
        # The same seed, two widths: the answer to `w <= width` differs, so the
        # guard must check it with the width of the call, not the traced one.
        torch.manual_seed(0)
        w = int(torch.randint(1, 40, (1,)))
        narrow, wide = torch.rand(2, w - 1), torch.rand(2, w + 1)
        for x in (narrow, wide):
            torch._dynamo.mark_dynamic(x, 1)
        cnt = CompileCounter()
        compiled = torch.compile(_drawn_width_if_it_fits, backend=cnt, fullgraph=True)
        for x in (wide, narrow, wide, narrow):
            self.check_calls(_drawn_width_if_it_fits, compiled, [0], lambda: (x,))
        self.assertEqual(cnt.frame_count, 2)

    def test_resized_crop_search_on_inductor(self):
        x = torch.rand(3, 16, 20)
        self.graphs(random_resized_crop_log_ratio, range(6), lambda: (x,), backend="inductor", atol=1e-6, rtol=1e-5)


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=64)
class ReplayedDrawsTakenTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """The prologue takes the draws its entry's replay guard made on the call.

    The guard draws on the call's RNG state (and puts it back); the prologue
    would make the same draws next. It takes them instead, only if the state
    and the sizes are those the guard drew from.
    """

    def test_prologue_takes_the_replayed_draws(self):
        counters = torch._dynamo.utils.counters
        counters.clear()
        x = torch.rand(2, 6, 5)
        # several entries: a call tries the others before its own
        self.assertGreater(self.graphs(_first_fit_and, range(12), lambda: (x,)), 1)
        # every call, the ones that compile an entry too: Dynamo checks the new
        # entry's guards before it runs the entry
        self.assertEqual(counters["stats"]["torch_rng_draws_taken_from_replay"], 12)

    def test_other_state_or_sizes_draw_again(self):
        from torch._dynamo.output_graph import _draw_torch_rng, _ReplayedTorchRng

        def draw(values, sizes):
            return torch.randint(0, sizes[0], (2,))

        torch.manual_seed(0)
        before = torch.random.get_rng_state()
        taken = [torch.tensor([-1, -1])]
        for made_before, made_sizes in [(before, (5,)), (torch.random.get_rng_state(), (7,))]:
            torch.manual_seed(1)
            expected = torch.randint(0, 7, (2,))
            replayed = _ReplayedTorchRng()
            replayed.made = (made_before, made_sizes, taken, torch.random.get_rng_state())
            torch.manual_seed(1)
            (value,) = _draw_torch_rng([draw], 7, replayed=replayed)
            self.assertEqual(value, expected)
            self.assertIsNone(replayed.made)  # taken or not, only once
        # the state and sizes it drew from: its values, and the state after them
        torch.manual_seed(1)
        before = torch.random.get_rng_state()
        torch.randint(0, 7, (2,))
        after = torch.random.get_rng_state()
        replayed = _ReplayedTorchRng()
        replayed.made = (before, (7,), taken, after)
        torch.manual_seed(1)
        self.assertIs(_draw_torch_rng([draw], 7, replayed=replayed), taken)
        self.assertEqual(torch.random.get_rng_state(), after)


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=64)
class ShortCircuitDecisionsTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """A short-circuit chain of comparisons of draws is one decision.

    `0 < w <= width and 0 < h <= height` is four jumps; decided one by one,
    a search that draws until both fit forks per attempt into which bound
    failed. Combined into one SymBool at the last jump: one graph per number
    of attempts.
    """

    def check_one_graph_per_attempt_count(self, fn):
        x = torch.rand(2, 6, 5)
        seeds = range(40)
        paths = _draws_per_seed(fn, seeds, lambda: (x,))
        self.assertGreater(len(paths), 2)
        self.assertEqual(self.graphs(fn, seeds, lambda: (x,)), len(paths))

    def test_and(self):
        self.check_one_graph_per_attempt_count(_first_fit_and)

    def test_or(self):
        self.check_one_graph_per_attempt_count(_first_fit_or)

    def test_not_and(self):
        self.check_one_graph_per_attempt_count(_first_fit_not_and)


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=64)
class ShortCircuitDecisionsKeptTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """Chains that stay one decision per comparison still equal eager."""

    def check_more_graphs_than_attempt_counts(self, fn):
        x = torch.rand(2, 6, 5)
        seeds = range(40)
        paths = _draws_per_seed(fn, seeds, lambda: (x,))
        self.assertGreater(self.graphs(fn, seeds, lambda: (x,)), len(paths))

    def test_through_a_call(self):
        self.check_more_graphs_than_attempt_counts(_first_fit_through_a_call)

    def test_with_a_division(self):
        self.check_more_graphs_than_attempt_counts(_first_fit_with_a_division)

    def test_on_inductor(self):
        x = torch.rand(2, 6, 5)
        self.graphs(_first_fit_and, range(8), lambda: (x,), backend="inductor")


def _search_exits(fn, x, seeds):
    """For each seed, whether eager's search found a fit (changed x)."""
    exits = set()
    for seed in seeds:
        torch.manual_seed(seed)
        exits.add(not torch.equal(fn(x), x))
    return exits


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=64)
class DrawnAgainTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """A bounded search's attempts, drawn again by the prologue until one exits.

    `for _ in range(n)`, whose iteration only draws and computes, left by a
    decision on the draws: the prologue (and the replay guard) draw the
    iteration again while the decision goes back to the loop, up to the
    attempts left, and the graph takes the values of the attempt that exits.
    One graph for any number of attempts, and one for a search none exits.
    """

    def test_resized_crop_search(self):
        for shape in [(3, 16, 20), (3, 24, 24)]:
            x = torch.rand(shape)
            paths = _draws_per_seed(random_resized_crop_log_ratio, range(40), lambda: (x,))
            self.assertGreater(len(paths), 2)
            self.assertLess(max(paths), 20)  # every search finds a crop
            torch._dynamo.reset()
            self.assertEqual(self.graphs(random_resized_crop_log_ratio, range(40), lambda: (x,)), 1)

    def test_search_that_none_exits(self):
        # 3 attempts, each fitting one time in four: both ways out of the loop
        x = torch.rand(2, 6, 5)
        self.assertEqual(_search_exits(_first_fit_within_3, x, range(40)), {False, True})
        paths = _draws_per_seed(_first_fit_within_3, range(40), lambda: (x,))
        self.assertEqual(len(paths), 3)
        self.assertEqual(self.graphs(_first_fit_within_3, range(40), lambda: (x,)), 2)

    def test_sizes_vary(self):
        # the guard and the prologue read the sizes the decision compares with
        cnt = CompileCounter()
        compiled = torch.compile(random_resized_crop_log_ratio, backend=cnt, fullgraph=True)
        sizes = [(16, 20), (23, 17), (30, 30), (12, 25), (19, 19)]
        for k, (height, width) in enumerate(sizes):
            x = torch.rand(3, height, width)
            torch._dynamo.mark_dynamic(x, 1)
            torch._dynamo.mark_dynamic(x, 2)
            seeds = range(10 * k, 10 * k + 10)
            with torch._dynamo.config.patch(error_on_recompile=k > 0):
                self.check_calls(random_resized_crop_log_ratio, compiled, seeds, lambda: (x,))
        self.assertEqual(cnt.frame_count, 1)


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=64)
class DrawnAgainKeptTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """Searches whose attempts are not alike stay one graph per path (more
    than the loop's two ways out), with eager's values and RNG stream."""

    def check_one_graph_per_path(self, fn):
        x = torch.rand(2, 6, 5)
        self.assertGreater(self.graphs(fn, range(40), lambda: (x,)), 2)

    def test_attempts_read_the_loop_item(self):
        self.check_one_graph_per_path(_first_fit_growing)

    def test_attempts_mutate(self):
        self.check_one_graph_per_path(_first_fit_counted)

    def test_a_later_check_after_a_write(self):
        # the first check's way on comes back to the loop through a check
        # after a write, which is no attempt's: the loop is traced again
        # attempt by attempt (a graph per path), eager's values and stream
        self.check_one_graph_per_path(_second_check_after_a_write)


def _second_check_after_a_write(x):
    seen = []
    for _ in range(3):
        w = torch.randint(0, 10, ()).item()
        if w > 6:
            continue
        seen.append(w)
        if w < 3:
            continue
        return x * w + len(seen)
    return x


def _repeat_drawn_times(x):
    # a Python loop over a drawn count needs the count's value
    for _ in range(torch.randint(1, 4, (1,)).item()):
        x = x + 1
    return x


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=64)
class DrawsWithoutFullgraphTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """Without fullgraph, the .item() of hoisted draws is an unbacked symbol too.

    It used to be specialized to its value unless fullgraph (or
    capture_scalar_outputs) was on: a graph per value drawn. Where tracing
    needs a guard on such a value, the analysis restarts with its draws
    specialized, as before; no graph breaks either way.
    """

    def test_resized_crop_search(self):
        counters = torch._dynamo.utils.counters
        counters.clear()
        x = torch.rand(3, 16, 20)
        paths = _draws_per_seed(random_resized_crop_log_ratio, range(20), lambda: (x,))
        self.assertGreater(len(paths), 1)
        self.assertLess(max(paths), 20)  # every search finds a crop
        self.assertEqual(
            self.graphs(random_resized_crop_log_ratio, range(20), lambda: (x,), fullgraph=False), 1
        )
        self.assertEqual(dict(counters["graph_break"]), {})

    def test_on_inductor(self):
        x = torch.rand(3, 16, 20)
        backend = CompileCounterWithBackend("inductor")
        self.graphs(
            random_resized_crop_log_ratio, range(8), lambda: (x,), backend=backend, fullgraph=False, atol=1e-6, rtol=1e-5
        )
        self.assertEqual(backend.frame_count, 1)

    def test_value_needed_is_specialized(self):
        counters = torch._dynamo.utils.counters
        counters.clear()
        seeds = range(12)
        values = set()
        for seed in seeds:
            torch.manual_seed(seed)
            values.add(int(torch.randint(1, 4, (1,))))
        self.assertEqual(len(values), 3)
        self.assertEqual(self.graphs(_repeat_drawn_times, seeds, lambda: (torch.rand(4),), fullgraph=False), 3)
        self.assertEqual(dict(counters["graph_break"]), {})


def _shift_then_test(x):
    # writes the input, then decides on what it wrote
    x += torch.rand(())
    if (x > 0.5).all():
        return x * 2
    return x


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, data_dependent_branches_as_cond=True, recompile_limit=64)
class FrameTensorDecisionsTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """A decision on draws and on the frame's tensors, replayed on the call's tensors.

    RandomIoUCrop's search tests each drawn crop against the sample's boxes
    (`if not is_within_crop_area.any(): continue`, then the IoU of the boxes
    kept): a decision on an input tensor as well as on draws. The guard reads
    the tensor by its source and computes the decision again on the call's
    values, with the replayed draws: one graph per path of the search (fewer
    since the attempts are drawn again past every test: SearchStagesTests).
    """

    def test_iou_crop_search(self):
        x, boxes = torch.rand(3, 16, 20), torch.tensor(IOU_BOXES)
        cnt = CompileCounter()
        compiled = torch.compile(random_iou_crop, backend=cnt, fullgraph=True)
        self.check_calls(random_iou_crop, compiled, range(6), lambda: (x, boxes))
        # at least whether a search is made, and at most a graph per path
        self.assertGreater(cnt.frame_count, 1)
        self.assertLessEqual(cnt.frame_count, 6)

    def test_guard_reads_the_tensors_of_the_call(self):
        # the same seed, two sets of boxes (of one shape) the first crop drawn
        # does and does not hold: the guard must test the crop against the
        # boxes of the call
        x = torch.rand(3, 16, 20)
        near, far = torch.tensor(IOU_BOXES), torch.tensor([[0.0, 0.0, 1.0, 1.0]] * len(IOU_BOXES))
        cnt = CompileCounter()
        compiled = torch.compile(random_iou_crop, backend=cnt, fullgraph=True)
        for boxes in (near, far, near, far):
            self.check_calls(random_iou_crop, compiled, [2], lambda: (x, boxes))
        self.assertEqual(cnt.frame_count, 2)

    def test_on_inductor(self):
        x, boxes = torch.rand(3, 16, 20), torch.tensor(IOU_BOXES)
        self.graphs(random_iou_crop, range(2), lambda: (x, boxes), backend="inductor")


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=64)
class FrameTensorDecisionsKeptTests(torch._dynamo.test_case.TestCase):
    """Decisions on the frame's tensors that the guard does not replay."""

    def test_guard_never_writes_to_the_call_tensors(self):
        # `x += draw` is a write: a decision computed after it is not replayed
        # (the guard would write into the caller's tensor), it breaks the graph
        for seed in range(4):
            x = torch.rand(3)
            eager_x, compiled_x = x.clone(), x.clone()
            torch.manual_seed(seed)
            eager = _shift_then_test(eager_x)
            torch._dynamo.reset()
            torch.manual_seed(seed)
            out = torch.compile(_shift_then_test, backend="eager")(compiled_x)
            self.assertEqual(out, eager, atol=0, rtol=0)
            self.assertEqual(compiled_x, eager_x, atol=0, rtol=0)


def _test_on_a_clipped_copy(x):
    # clamp_bounding_boxes' pattern: a copy of an input, clipped in place
    y = x + torch.rand(())
    y.clamp_(max=1.0)
    if (y == 1.0).any():
        return x * 2
    return x


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=64)
class WritesIntoCopiesTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """A decision on the frame's tensors is replayed when what it is computed
    from writes only into tensors the graph made, never into the caller's
    (torchvision's detection recipe clips the boxes it padded with clamp_
    before RandomIoUCrop tests its crops against them)."""

    def test_clipped_copy(self):
        x = torch.rand(4)
        before = x.clone()
        outcomes = set()
        for seed in range(8):
            torch.manual_seed(seed)
            outcomes.add(not torch.equal(_test_on_a_clipped_copy(x), x))
        self.assertEqual(outcomes, {False, True})
        # one graph per outcome; the guard's replay leaves the caller's x as it was
        self.assertEqual(self.graphs(_test_on_a_clipped_copy, range(8), lambda: (x,)), 2)
        self.assertEqual(x, before, atol=0, rtol=0)


def _offset_drawn_across_the_width(x):
    # RandomIoUCrop's `left = int((orig_w - new_w) * r[0])`: the .item() of a
    # draw times an input size
    left = int(x.shape[-1] * torch.rand(1))
    return x[..., left:] * 2


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, data_dependent_branches_as_cond=True, recompile_limit=64)
class DrawsTimesSizesTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """The .item() of a value computed from hoisted draws and input sizes is an
    unbacked symbol, its value replayed from the draws and the call's sizes.

    It used to be specialized to its value (a graph per value) where the size
    is symbolic: the prologue and the guard read the sizes from the call.
    """

    @staticmethod
    def _sized(height, width):
        x = torch.rand(3, height, width)
        torch._dynamo.mark_dynamic(x, 1)
        torch._dynamo.mark_dynamic(x, 2)
        return x

    def test_offset_drawn_across_the_width(self):
        cnt = CompileCounter()
        compiled = torch.compile(_offset_drawn_across_the_width, backend=cnt, fullgraph=True)
        for k, (height, width) in enumerate([(16, 20), (17, 23), (30, 18), (21, 21)]):
            x = self._sized(height, width)
            with torch._dynamo.config.patch(error_on_recompile=k > 0):
                self.check_calls(_offset_drawn_across_the_width, compiled, range(5 * k, 5 * k + 5), lambda: (x,))
        self.assertEqual(cnt.frame_count, 1)

    def test_iou_crop_search_sizes_vary(self):
        # the search's crops are drawn across the image's sizes, symbolic from
        # the second size on, and tested against the boxes: eager's crops and
        # RNG stream at every size
        boxes = torch.tensor(IOU_BOXES)
        cnt = CompileCounter()
        compiled = torch.compile(random_iou_crop, backend=cnt, fullgraph=True)
        for k, (height, width) in enumerate([(16, 20), (18, 21), (20, 24)]):
            x = self._sized(height, width)
            self.check_calls(random_iou_crop, compiled, range(2 * k, 2 * k + 2), lambda: (x, boxes))


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, data_dependent_branches_as_cond=True, recompile_limit=64)
class SearchStagesTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """A search whose attempts are tested at several places, each going back
    to the loop where it fails, drawn again by the prologue until an attempt
    passes them all, or until none is left.

    RandomIoUCrop tests each drawn crop's aspect ratio, then whether it holds
    the center of a box of the sample, then the IoU of those boxes with it: a
    graph per path of its search until the attempts were drawn again past
    every test (tensors of the frame's included), each asked where eager
    asks it. A search that no attempt passes leaves the loop; what its
    attempts computed, dead there, leaves the graph.
    """

    def test_one_bound_at_a_time(self):
        # one graph per way out of the loop (was 13 over these seeds)
        x = torch.rand(2, 6, 5)
        self.assertEqual(_search_exits(_first_fit_one_bound_at_a_time, x, range(40)), {False, True})
        self.assertEqual(self.graphs(_first_fit_one_bound_at_a_time, range(40), lambda: (x,)), 2)

    def test_iou_crop_search(self):
        # one graph per number of searches made (an option's search that no
        # attempt passes is followed by another option's), not per path: 6
        # over 40 seeds, where the first option's search fails for some (was
        # 22). On this backend the graph runs all it holds: a failed search's
        # IoUs, the max of none at its last attempt, must have left it.
        x, boxes = torch.rand(3, 16, 20), torch.tensor(IOU_BOXES)
        self.assertLessEqual(self.graphs(random_iou_crop, range(40), lambda: (x, boxes)), 6)

    def test_search_none_passes_on_inductor(self):
        # seed 0: none of the first option's 40 attempts passes; the graph
        # without the failed search's computations (and the unbacked
        # symbols they defined) compiles and runs on inductor
        x, boxes = torch.rand(3, 16, 20), torch.tensor(IOU_BOXES)
        self.graphs(random_iou_crop, range(3), lambda: (x, boxes), backend="inductor")


def _option_drawn(x):
    # RandomIoUCrop's `self.options[int(torch.randint(len(self.options), (1,)))]`
    v = IOU_OPTIONS[int(torch.randint(low=0, high=len(IOU_OPTIONS), size=(1,)))]
    if v >= 1.0:
        return x
    return x * v


def _mixed_items_drawn(x):
    # an int and a float: no one type to select among
    return x * (1, 0.5)[int(torch.randint(0, 2, ()))]


@torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=64)
class DrawnIndexTests(ReplayedDecisionsMixin, torch._dynamo.test_case.TestCase):
    """A tuple of numbers indexed by the .item() of a hoisted draw gives a
    value for every draw, where indexing with the draw's value specialized
    it: a graph per item (RandomIoUCrop's options, RandomShortestSize's
    sides)."""

    def test_option_drawn(self):
        # one graph per outcome of `v >= 1.0`, not one per option
        self.assertEqual(self.graphs(_option_drawn, range(20), lambda: (torch.rand(3, 4),)), 2)

    def test_side_drawn(self):
        # every side is a symbolic size: one graph for the three
        cnt = CompileCounter()
        compiled = torch.compile(random_shortest_size, backend=cnt, fullgraph=True)
        x = torch.rand(3, 16, 20)
        self.check_calls(random_shortest_size, compiled, range(2), lambda: (x,))
        with torch._dynamo.config.patch(error_on_recompile=True):
            self.check_calls(random_shortest_size, compiled, range(2, 12), lambda: (x,))
        self.assertEqual(cnt.frame_count, 1)

    def test_on_inductor(self):
        self.graphs(_option_drawn, range(6), lambda: (torch.rand(3, 4),), backend="inductor")

    def test_items_of_two_types_are_specialized(self):
        # as before: the draw's value picks the item, a graph for each
        self.assertEqual(self.graphs(_mixed_items_drawn, range(8), lambda: (torch.rand(3),)), 2)


class ShapeEnvReplayedValuesTests(torch._dynamo.test_case.TestCase):
    """ShapeEnv.replayed_unbacked_vals: answers a caller checks before each run."""

    def test_answers_are_recorded_not_raised(self):
        shape_env = ShapeEnv()
        u = shape_env.create_unbacked_symint()
        shape_env.replayed_unbacked_vals[u.node.expr] = 5
        self.assertTrue(u > 3)
        self.assertFalse(u == 4)
        self.assertEqual(
            [(str(e), a) for e, a in shape_env.replayed_decisions],
            [(f"{u.node.expr} > 3", True), (f"Eq({u.node.expr}, 4)", False)],
        )
        # what was answered is known from now on
        self.assertTrue(shape_env.replayed_decisions and (u > 3))

    def test_checks_that_hold_need_no_runtime_assert(self):
        shape_env = ShapeEnv()
        u = shape_env.create_unbacked_symint()
        shape_env.replayed_unbacked_vals[u.node.expr] = 5
        torch._check(u < 10)
        self.assertEqual(shape_env.deferred_runtime_asserts, {})
        self.assertEqual([a for _, a in shape_env.replayed_decisions], [True])

    def test_float_arithmetic_is_pythons(self):
        # The answer is computed as the user's code computes it, in floats.
        shape_env = ShapeEnv()
        f = shape_env.create_unbacked_symfloat()
        value = 0.1
        shape_env.replayed_unbacked_vals[f.node.expr] = value
        self.assertEqual(bool(f * 3 > 0.3), value * 3 > 0.3)

    def test_other_unbacked_symbols_still_raise(self):
        shape_env = ShapeEnv()
        u = shape_env.create_unbacked_symint()
        v = shape_env.create_unbacked_symint()
        shape_env.replayed_unbacked_vals[u.node.expr] = 5
        with self.assertRaises(torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode):
            bool(u + v > 3)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
