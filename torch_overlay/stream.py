"""Workloads as users run them: torchvision's own transforms on a stream of images of varied sizes.

``python -m torch_overlay bench --workload NAME`` runs each workload in one
child process per (side, configuration): the BASE (unpatched torch and
torchvision) and the overlay (both series), each with a cold Inductor cache,
so compile time counts as a user's first pass would.  Workloads:

``classification``
    ``Compose([RandomResizedCrop(224, antialias=True), RandomHorizontalFlip(),
    ToDtype(float32, scale=True), Normalize(ImageNet)])`` on uint8 images whose
    height and width are drawn from 256-512, one image per call.
``detection``
    The detection reference recipe on an Image with BoundingBoxes and labels:
    ``RandomPhotometricDistort, RandomZoomOut, RandomIoUCrop,
    RandomHorizontalFlip, SanitizeBoundingBoxes, ToDtype``.
``dataloader``
    A map-style dataset of generated uint8 images of varied sizes through the
    classification transform, ``num_workers=2``, eager transforms vs compiled
    ones (each worker compiles its own); images/s end to end and peak RSS per
    worker, and the same DataLoader with no transform (an output of the same
    size): the ceiling that generating the images and sending them back sets
    on any speed-up of the transform.

Before the workloads, each side compiles one small function in a child of its
own: Inductor keeps its precompiled C++ header outside ``TORCHINDUCTOR_CACHE_DIR``
(in the machine-wide ``<tmp>/torchinductor_<user>/precompiled_headers``, one per
torch install and flags), so the first process to compile a CPU kernel on a new
machine builds it, several seconds, and every later one reuses it.  Building it
there keeps it out of whichever workload runs first; the bench prints what it
took, a new machine's one-time cost.

Each stream workload is measured in three configurations: Dynamo's defaults,
the random-transform flags on (``hoist_torch_rng_draws``,
``data_dependent_branches_as_cond``; BASE has no such flags and says so), and
``fullgraph=True`` with the flags (reported as "does not compile" with the
reason when it does not).  Per configuration: the first pass over the images
(compiles included), then interleaved passes of eager and compiled on the same
images and seeds (the steady state of what the first pass compiled); per-image
medians of those, the ratio, the graphs compiled and graph breaks after the
first ``n`` images and after ``10 n`` new ones (or what stopped those, e.g.
fullgraph's recompile limit), and whether every compiled output equalled
eager's under the same seed.
"""

from __future__ import annotations

import os
import re
import statistics
import tempfile
import time

WORKLOADS = ("classification", "detection", "dataloader")
CONFIGS = ("default", "flags", "fullgraph")
FLAGS = ("hoist_torch_rng_draws", "data_dependent_branches_as_cond")
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


# --------------------------------------------------------------------------- worker side


def _images(n: int, seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        h, w = (int(v) for v in torch.randint(256, 513, (2,), generator=g))
        out.append(torch.randint(0, 256, (3, h, w), dtype=torch.uint8, generator=g))
    return out


def classification_transform():
    import torch
    import torchvision.transforms.v2 as T

    return T.Compose([
        T.RandomResizedCrop(224, antialias=True),
        T.RandomHorizontalFlip(),
        T.ToDtype(torch.float32, scale=True),
        T.Normalize(MEAN, STD),
    ])


def detection_transform():
    import torch
    import torchvision.transforms.v2 as T

    return T.Compose([
        T.RandomPhotometricDistort(p=1.0),
        T.RandomZoomOut(fill={"image": 123, "others": 0}),
        T.RandomIoUCrop(),
        T.RandomHorizontalFlip(p=0.5),
        T.SanitizeBoundingBoxes(),
        T.ToDtype(torch.float32, scale=True),
    ])


def _samples(workload: str, n: int):
    import torch
    from torchvision import tv_tensors

    images = _images(n)
    if workload == "classification":
        return [(x,) for x in images]
    g = torch.Generator().manual_seed(1)
    samples = []
    for x in images:
        h, w = x.shape[-2:]
        k = 4
        xy = torch.rand(k, 2, generator=g) * torch.tensor([w * 0.6, h * 0.6])
        wh = (torch.rand(k, 2, generator=g) * 0.3 + 0.1) * torch.tensor([w, h])
        boxes = tv_tensors.BoundingBoxes(torch.cat([xy, xy + wh], dim=1), format="XYXY", canvas_size=(h, w))
        labels = torch.randint(1, 10, (k,), generator=g)
        samples.append(((tv_tensors.Image(x), {"boxes": boxes, "labels": labels}),))
    return samples


def _equal(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor) and type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
            and torch.allclose(a.as_subclass(torch.Tensor).float(), b.as_subclass(torch.Tensor).float(),
                               rtol=1e-4, atol=1e-4)
        )
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


def _error_line(e: BaseException) -> str:
    """A row's account of what stopped it: the exception's type and first line."""
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:120]}"


def warm_header() -> dict:
    """Compile one small CPU function with Inductor: builds the machine-wide precompiled header if absent."""
    import torch

    torch.set_num_threads(1)
    result: dict = {"workload": "header", "torch_file": torch.__file__}
    start = time.perf_counter()
    try:
        torch.compile(lambda x: (x * 2).sum())(torch.ones(64))
    except Exception as e:  # noqa: BLE001 - the workloads' rows say what fails; this line says it first
        result["error"] = _error_line(e)
    result["seconds"] = time.perf_counter() - start
    return result


def _counts() -> dict:
    from torch._dynamo.utils import counters

    return {
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
        "breaks": int(sum(counters["graph_break"].values())),
    }


def _set_flags(config: str, result: dict) -> None:
    """Turn the random-transform flags on unless ``config`` is the default; note where they don't exist."""
    import torch._dynamo

    if config == "default":
        return
    if any(not hasattr(torch._dynamo.config, f) for f in FLAGS):
        result["note"] = "no such flags: defaults"
    for f in FLAGS:
        if hasattr(torch._dynamo.config, f):
            setattr(torch._dynamo.config, f, True)


def run_stream(workload: str, config: str, n: int, passes: int) -> dict:
    """One (workload, configuration) in this process: see the module docstring."""
    import torch
    import torch._dynamo

    from .torchvision_env import prepare

    prepare()
    torch.set_num_threads(1)
    result: dict = {"workload": workload, "config": config, "n": n, "torch_file": torch.__file__}
    _set_flags(config, result)
    transform = classification_transform() if workload == "classification" else detection_transform()
    compiled = torch.compile(transform, fullgraph=config == "fullgraph")
    samples = _samples(workload, n)

    def seed(i):
        torch.manual_seed(1000 + i)

    def seeded(fn, i, args):
        seed(i)
        return fn(*args)

    def timed(fn, i, args):
        seed(i)  # the first pass's seeds: the steady state of what it compiled
        t0 = time.perf_counter()
        fn(*args)
        return time.perf_counter() - t0

    start = time.perf_counter()
    try:
        outs = [seeded(compiled, i, s) for i, s in enumerate(samples)]
    except Exception as e:  # noqa: BLE001 - a configuration that does not compile is a row
        result["error"] = _error_line(e)
        return result
    result["first_pass_s"] = time.perf_counter() - start
    result["equal"] = sum(_equal(o, seeded(transform, i, s)) for (i, s), o in zip(enumerate(samples), outs))
    result["at_n"] = _counts()
    eager_t, compiled_t = [], []
    for _ in range(passes):  # interleaved: both sides see the same machine state
        for times, fn in ((eager_t, transform), (compiled_t, compiled)):
            times.extend(timed(fn, i, s) for i, s in enumerate(samples))
    result["eager_us"] = statistics.median(eager_t) * 1e6
    result["compiled_us"] = statistics.median(compiled_t) * 1e6
    # Ten times as many distinct sizes and draws: the graph count must stay flat.
    try:
        for i, s in enumerate(_samples(workload, 10 * n)):
            seeded(compiled, 10_000 + i, s)
    except Exception as e:  # noqa: BLE001 - e.g. fullgraph's recompile limit: the row says so
        result["at_10n_error"] = f"{type(e).__name__} after {_counts()['graphs']} graphs"
        return result
    result["at_10n"] = _counts()
    return result


class _GeneratedImages:
    """A map-style dataset: image ``i`` is generated from ``i`` (sizes 256-512)."""

    def __init__(self, n: int, transform):
        self.n, self.transform = n, transform

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import torch

        g = torch.Generator().manual_seed(i)
        h, w = (int(v) for v in torch.randint(256, 513, (2,), generator=g))
        x = torch.randint(0, 256, (3, h, w), dtype=torch.uint8, generator=g)
        return self.transform(x), _peak_rss_kib()


def _peak_rss_kib() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class _Compiled:
    """Compiles the transform lazily, in the worker process that first calls it."""

    def __init__(self, config: str):
        self.config, self.fn = config, None

    def __call__(self, x):
        if self.fn is None:
            import torch

            self.fn = torch.compile(classification_transform(), fullgraph=self.config == "fullgraph")
        return self.fn(x)


class _NoTransform:
    """What the dataloader workload's ceiling runs instead of the transform:
    no work, an output of the transform's size and dtype."""

    def __call__(self, x):
        import torch

        return torch.empty(3, 224, 224)


def _worker_init(worker_id):
    import torch

    from .torchvision_env import prepare

    prepare()
    torch.set_num_threads(1)


_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?:\w*(?:Error|Exception|Hit)|Unsupported)(?::|$)")


def _worker_error(e: BaseException) -> str:
    """What went wrong in a DataLoader worker, from the error that wraps it.

    The wrapper's text holds the worker's traceback; Dynamo's errors end with
    advice ("Set TORCHDYNAMO_VERBOSE=1 ..."), so the last line that names an
    exception says it, not the last line.
    """
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    named = [line for line in lines if _EXCEPTION_LINE.match(line)]
    return (named or lines or [type(e).__name__])[-1]


def run_dataloader(config: str, n: int, workers: int = 2) -> dict:
    import torch
    import torch._dynamo

    from .torchvision_env import prepare

    prepare()
    result: dict = {"workload": "dataloader", "config": config, "n": n, "torch_file": torch.__file__}
    _set_flags(config, result)
    sides = (("eager", classification_transform()), ("compiled", _Compiled(config)), ("ceiling", _NoTransform()))
    for side, transform in sides:
        loader = torch.utils.data.DataLoader(
            _GeneratedImages(n, transform), batch_size=None, num_workers=workers,
            worker_init_fn=_worker_init, multiprocessing_context="fork",
        )
        peak = 0
        start = time.perf_counter()
        try:
            for _, rss in loader:
                peak = max(peak, int(rss))
        except Exception as e:  # noqa: BLE001 - a configuration that does not compile is a row
            result["error"] = f"{side}: {_worker_error(e)[:120]}"
            return result
        elapsed = time.perf_counter() - start
        result[f"{side}_images_per_s"] = n / elapsed
        result[f"{side}_peak_rss_mib"] = peak / 1024
    return result


# --------------------------------------------------------------------------- driver side


def _run(env: dict[str, str], args: list[str]) -> dict:
    from .suite import run_worker

    with tempfile.TemporaryDirectory(prefix="torch_overlay-inductor-") as cache:
        # A cold compile cache per process: a user's first pass, not a cache hit.
        env = dict(env, TORCHINDUCTOR_CACHE_DIR=cache)
        return run_worker("torch_overlay._stream_worker", args, env, capture=True)


def _row(label: str, r: dict) -> str:
    if "error" in r:
        return f"  {label:<22} does not compile: {r['error']}"
    if r["workload"] == "dataloader":
        e, c = r["eager_images_per_s"], r["compiled_images_per_s"]
        ceiling = r.get("ceiling_images_per_s")
        return (
            f"  {label:<22} eager {e:7.1f} img/s  compiled {c:7.1f} img/s  {c / e:5.2f}x  "
            f"peak RSS per worker: eager {r['eager_peak_rss_mib']:.0f} MiB, compiled {r['compiled_peak_rss_mib']:.0f} MiB"
            + ("" if ceiling is None else f"  no transform {ceiling:7.1f} img/s ({ceiling / e:4.2f}x eager: the ceiling)")
        )
    speed = r["eager_us"] / r["compiled_us"]
    n = r["n"]
    at_10n = (
        f"fails @{10 * n} ({r['at_10n_error']})" if "at_10n_error" in r else f"{r['at_10n']['graphs']:>2} @{10 * n}"
    )
    return (
        f"  {label:<22} eager {r['eager_us']:7.0f} us  compiled {r['compiled_us']:7.0f} us  {speed:5.2f}x  "
        f"first pass {r['first_pass_s']:5.1f} s  graphs {r['at_n']['graphs']:>2} @{n} / "
        f"{at_10n}  breaks {r['at_n']['breaks']:>3} @{n}  "
        + ("eager-equal" if r["equal"] == n else f"{n - r['equal']}/{n} DIFFER FROM EAGER")
    )


def bench_streams(overlay, workloads: list[str], n: int, passes: int, dataloader_n: int, log=print) -> bool:
    from .overlay import child_env
    from .suite import base_env

    sides = (("base", base_env()), ("series", child_env(overlay)))
    ok = True
    warm = {side: _run(env, ["header", "-", "0", "0"]) for side, env in sides}
    log("Inductor's precompiled header is machine-wide (outside TORCHINDUCTOR_CACHE_DIR): the first compile "
        "on a new machine builds it, later ones reuse it. One small compile per side before the workloads "
        "(cold cache: the ISA's dry compiles, the header if absent, one kernel): "
        + ", ".join(f"{side} {r['seconds']:.1f} s" + (f" (failed: {r['error']})" if "error" in r else "")
                    for side, r in warm.items()))
    for workload in workloads:
        log("")
        if workload == "dataloader":
            log(f"workload dataloader: {dataloader_n} generated uint8 images of 256-512 px through the "
                "classification transform, num_workers=2, batch_size=None; compile time included")
        else:
            log(f"workload {workload}: {n} images of 256-512 px, 1 thread; per-image medians over {passes} "
                "interleaved passes after a first pass (which compiles, cold cache)")
        for config in CONFIGS:
            for side, env in sides:
                if workload == "dataloader":
                    args = ["dataloader", config, str(dataloader_n), "0"]
                else:
                    args = [workload, config, str(n), str(passes)]
                r = _run(env, args)
                if side == "series" and not r["torch_file"].startswith(str(overlay.root)):
                    raise RuntimeError(f"the series worker imported {r['torch_file']}, not the overlay")
                log(_row(f"{side} {config}", r) + (f"  ({r['note']})" if r.get("note") else ""))
                if "equal" in r and r["equal"] != r["n"]:
                    ok = False
    return ok
