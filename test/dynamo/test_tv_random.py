# Owner(s): ["module: dynamo"]
import math

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter


def random_hflip(x, p=0.5):
    if torch.rand(1) >= p:
        return x
    return x.flip(-1)


def random_choice(x):
    op = int(torch.randint(3, (1,)))
    if op == 0:
        return x + 1
    if op == 1:
        return x * 2
    return x - 1


def random_resized_crop(x):
    height, width = x.shape[-2:]
    for _ in range(10):
        area = height * width * torch.empty(1).uniform_(0.3, 1.0).item()
        log_ratio = (math.log(3 / 4), math.log(4 / 3))
        ratio = math.exp(torch.empty(1).uniform_(*log_ratio).item())
        w = int(round(math.sqrt(area * ratio)))
        h = int(round(math.sqrt(area / ratio)))
        if 0 < w <= width and 0 < h <= height:
            i = int(torch.randint(0, height - h + 1, size=(1,)).item())
            j = int(torch.randint(0, width - w + 1, size=(1,)).item())
            return x[..., i : i + h, j : j + w] * 1
    return x * 1


class HoistTorchRngScalarsTests(torch._dynamo.test_case.TestCase):
    def check_calls(self, fn, calls, max_frames):
        x = torch.rand(3, 16, 20)
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        outs = set()
        with torch._dynamo.config.patch(
            hoist_torch_rng_scalars=True, recompile_limit=64
        ):
            for seed in range(calls):
                torch.manual_seed(seed)
                eager, eager_next = fn(x), torch.rand(1)
                torch.manual_seed(seed)
                out, out_next = compiled(x), torch.rand(1)
                self.assertEqual(out.shape, eager.shape)
                self.assertEqual(out, eager)
                self.assertEqual(out_next, eager_next)
                outs.add((tuple(out.shape), torch.equal(out, x)))
        self.assertLessEqual(cnt.frame_count, max_frames)
        return outs

    def test_random_apply_branch(self):
        # both outcomes, one graph per outcome
        outs = self.check_calls(random_hflip, 30, 2)
        self.assertEqual(len(outs), 2)

    def test_random_choice(self):
        self.check_calls(random_choice, 30, 3)

    def test_random_resized_crop_loop(self):
        self.check_calls(random_resized_crop, 5, 5)


class HoistTorchRngScalarsOffTests(torch._dynamo.test_case.TestCase):
    def test_flag_off_still_breaks(self):
        compiled = torch.compile(random_hflip, backend="eager", fullgraph=True)
        with self.assertRaises(torch._dynamo.exc.Unsupported):
            compiled(torch.rand(3, 4, 5))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
