"""Random v2 transforms under torch.compile keep eager's outputs and RNG stream.

Default Dynamo config, no ``fullgraph``: wherever a transform's random draw
stops the graph, Dynamo must fall back to running that part eagerly, so the
user still gets, call for call and seed for seed, the output eager gives and
the global RNG left in the state eager leaves it in.
"""

import pytest
import torch
import torch._dynamo
from torchvision import tv_tensors
from torchvision.transforms import v2 as T

TRANSFORMS = {
    "RandomHorizontalFlip": lambda: T.RandomHorizontalFlip(),
    "RandomVerticalFlip": lambda: T.RandomVerticalFlip(),
    "RandomResizedCrop": lambda: T.RandomResizedCrop(16, antialias=True),
    "RandomCrop": lambda: T.RandomCrop(12, padding=2),
    "RandomRotation": lambda: T.RandomRotation(30),
    "ColorJitter": lambda: T.ColorJitter(0.4, 0.4, 0.4, 0.1),
    "RandomErasing": lambda: T.RandomErasing(p=0.7),
    "RandomPerspective": lambda: T.RandomPerspective(p=0.7),
    "RandAugment": lambda: T.RandAugment(),
}
SEEDS = range(5)


def _input(kind):
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 256, (3, 20, 24), dtype=torch.uint8, generator=g)
    return tv_tensors.Image(x) if kind == "Image" else x


def _calls(fn, x):
    """Outputs and the RNG state after each call, one call per seed."""
    out = []
    for seed in SEEDS:
        torch.manual_seed(seed)
        y = fn(x)
        out.append((y, torch.get_rng_state()))
    return out


@pytest.mark.parametrize("kind", ["tensor", "Image"])
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_compiled_random_transform_keeps_eager_stream(name, kind):
    torch._dynamo.reset()
    transform = TRANSFORMS[name]()
    x = _input(kind)
    expected = _calls(transform, x)
    actual = _calls(torch.compile(transform, backend="eager"), x)
    for seed, ((y, state), (y_e, state_e)) in enumerate(zip(actual, expected)):
        assert type(y) is type(y_e), seed
        assert torch.equal(y.as_subclass(torch.Tensor), y_e.as_subclass(torch.Tensor)), seed
        assert torch.equal(state, state_e), f"seed {seed}: the RNG stream moved differently"
    torch._dynamo.reset()
