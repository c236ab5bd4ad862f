"""The benchmark: eager vs inductor on the base vs inductor on the overlay, side by side.

``python -m torch_overlay bench`` runs one worker process on the unpatched torch
and one on the overlay (the overlay must be on the path before ``import torch``).
Each worker times, on the same inputs, every case eagerly and compiled with
inductor, at 1 thread and at all threads, with ``torch.utils.benchmark``
(``blocked_autorange``), in short blocks that alternate between the two sides;
each side reports the median of its blocks.  Each speed ratio is eager /
inductor measured in the same process, so both sides of a ratio saw the same
machine state.  Next to each compiled time it gives the time of the generated
code alone: the ``call`` function of Inductor's output module, run on inputs of
the graph's shapes, i.e. the kernels without Dynamo's frame wrapper, guard check
and the AOT / Inductor runtime wrappers; the difference is the fixed cost of a
compiled call.  It also reports first-call compile time, peak memory allocated
during one call (from the profiler's memory events) and Dynamo trace time of
the pipeline through the functionals vs through the kernels, with the number of
Python-level calls each trace makes (the same on a quiet or a busy machine).
"""

from __future__ import annotations

import statistics
import sys
import time

from .audit import MODEL_DIR
from .overlay import Overlay, child_env
from .suite import base_env, run_worker

SIZE = (3, 400, 500)
ROUNDS = 5  # interleaved timing blocks per side, see eager_and_compiled_us


# --------------------------------------------------------------------------- worker side


def _cases():
    import torch

    sys.path.insert(0, str(MODEL_DIR))
    import tv_dispatch_model as m
    import tv_model_kernels as k

    u8 = lambda: m.make_image(torch.uint8, SIZE)  # noqa: E731
    f32 = lambda: m.make_image(torch.float32, SIZE)  # noqa: E731
    ops = {
        # name: (kernel, functional, args factory, extra args)
        "horizontal_flip uint8": (m.horizontal_flip_image, m.horizontal_flip, u8, ()),
        "equalize uint8": (m.equalize_image, m.equalize, u8, ()),
        "rotate 30deg float32": (k.rotate_image, k.rotate, f32, (30.0,)),
        "resized_crop 224 aa uint8": (k.resized_crop_image, k.resized_crop, u8, (10, 20, 300, 400, [224, 224], True)),
        "to_dtype uint8->float32": (m.to_dtype_image, m.to_dtype, u8, (torch.float32, True)),
        "normalize float32": (m.normalize_image, m.normalize, f32, (k.MEAN, k.STD)),
        "adjust_hue float32": (k.adjust_hue_image, k.adjust_hue, f32, (0.2,)),
        "gaussian_blur 5x5 float32": (k.gaussian_blur_image, k.gaussian_blur, f32, ([5, 5], [1.5, 1.5])),
    }
    cases = {}
    for name, (kernel, functional, make, extra) in ops.items():
        cases[f"{name} (kernel)"] = (kernel, lambda make=make, extra=extra: (make(), *extra))
        cases[f"{name} (functional)"] = (functional, lambda make=make, extra=extra: (make(), *extra))
    cases["pipeline (kernels)"] = (k.pipeline_kernels, lambda: (u8(),))
    cases["pipeline (functionals)"] = (k.pipeline_functionals, lambda: (u8(),))
    # Almost no work: inductor minus eager here is the fixed cost of a compiled call.
    cases["call overhead: x + 1, 4 floats"] = (_add_one, lambda: (torch.zeros(4),))
    return cases, k


def _add_one(x):
    return x + 1


def _peak_bytes(fn, args) -> int:
    """Peak of live bytes allocated during one call, from the profiler's memory events."""
    import torch.profiler as tp

    with tp.profile(activities=[tp.ProfilerActivity.CPU], profile_memory=True) as prof:
        fn(*args)
    live = peak = 0
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    for e in sorted(events, key=lambda e: e.start_ns()):
        live += e.nbytes()  # negative for frees
        peak = max(peak, live)
    return peak


def _generated_code_call(codes: list[str]):
    """A no-argument callable running the generated module's ``call`` on inputs of
    the graph's shapes (the module's own ``get_args``), or None unless the compile
    produced exactly one module."""
    if len(codes) != 1:
        return None
    namespace = {"__name__": "torch_overlay_bench_generated"}  # not __main__: no benchmark harness
    exec(compile(codes[0], "<inductor output code>", "exec"), namespace)
    call, inputs = namespace["call"], namespace["get_args"]()
    return lambda: call(list(inputs))  # call() clears the list it is given


def run(threads: list[int], min_run_time: float, selected: list[str]) -> dict:
    import torch
    import torch._dynamo
    import torch.utils.benchmark as benchmark
    from torch._inductor.utils import run_and_get_code

    cases, k = _cases()
    import tv_dispatch_model as m  # on the path now, see _cases
    if selected:
        cases = {n: c for n, c in cases.items() if any(s in n for s in selected)}
    all_threads = torch.get_num_threads()
    threads = [all_threads if t == 0 else t for t in threads]

    def median_us(fn, args, nthreads, seconds) -> float:
        timer = benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args}, num_threads=nthreads)
        return timer.blocked_autorange(min_run_time=seconds).median * 1e6

    def eager_and_compiled_us(fn, compiled, code, args, nthreads) -> tuple[float, float, float | None]:
        # Interleave the sides in ROUNDS short blocks and take the median of
        # each side, so that a slow phase of the machine (or of the thread pool
        # after a change of thread count) hits them alike.
        torch.set_num_threads(nthreads)
        for _ in range(3):  # warm the thread pool and caches at this count
            fn(*args)
            compiled(*args)
            if code is not None:
                code()
        eager, inductor, code_only = [], [], []
        for _ in range(ROUNDS):
            eager.append(median_us(fn, args, nthreads, min_run_time / ROUNDS))
            inductor.append(median_us(compiled, args, nthreads, min_run_time / ROUNDS))
            if code is not None:
                code_only.append(median_us(code, (), nthreads, min_run_time / ROUNDS))
        return (
            statistics.median(eager),
            statistics.median(inductor),
            statistics.median(code_only) if code_only else None,
        )

    rows = []
    for i, (name, (fn, make_args)) in enumerate(cases.items(), 1):
        print(f"  [{i}/{len(cases)}] {name}", file=sys.stderr, flush=True)
        args = make_args()
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="inductor", fullgraph=True)
        torch.set_num_threads(all_threads)
        t0 = time.perf_counter()
        out, codes = run_and_get_code(compiled, *args)
        compile_s = time.perf_counter() - t0
        code = _generated_code_call(codes)
        expected = fn(*args)
        same = out.dtype == expected.dtype and out.shape == expected.shape and torch.allclose(
            out.float(), expected.float(), atol=1.0 if out.dtype == torch.uint8 else 1e-4, rtol=1e-4
        )
        row = {"case": name, "compile_s": compile_s, "matches_eager": bool(same),
               "peak_eager": _peak_bytes(fn, args), "peak_inductor": _peak_bytes(compiled, args)}
        for t in threads:
            row[f"eager_us@{t}"], row[f"inductor_us@{t}"], row[f"code_us@{t}"] = eager_and_compiled_us(
                fn, compiled, code, args, t
            )
        rows.append(row)
    torch.set_num_threads(all_threads)

    # Dynamo trace time, backend eager, first call in a warm process.
    image = k.make_image(torch.uint8, SIZE)
    trace, calls = {}, {}
    for label, fn in (("functionals", k.pipeline_functionals), ("kernels", k.pipeline_kernels)):
        samples = []
        for _ in range(5):
            torch._dynamo.reset()
            t0 = time.perf_counter()
            torch.compile(fn, backend="eager", fullgraph=True)(image)
            samples.append((time.perf_counter() - t0) * 1e3)
        trace[label] = statistics.median(samples)
        torch._dynamo.reset()
        calls[label], _ = m.python_calls(torch.compile(fn, backend="eager", fullgraph=True), image)
    return {"torch_file": torch.__file__, "threads": threads, "rows": rows, "trace_ms": trace, "trace_calls": calls}


# --------------------------------------------------------------------------- driver side


def _collect(env: dict[str, str], args: list[str], label: str, log) -> dict:
    log(f"benchmarking on {label} ...")
    # Measure real compiles, not cache hits from an earlier run or the other worker.
    env = dict(env, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    return run_worker("torch_overlay._bench_worker", args, env, capture=False)


def _fmt_us(us: float | None) -> str:
    return "        -" if us is None else f"{us:9.1f}"


def bench(overlay: Overlay, threads: list[int], min_run_time: float, selected: list[str], log=print) -> bool:
    args = ["--threads", ",".join(map(str, threads)), "--min-run-time", str(min_run_time)]
    for s in selected:
        args += ["--case", s]
    base = _collect(base_env(), args, "BASE (unpatched torch)", log)
    patched = _collect(child_env(overlay), args, "the overlay", log)
    if not patched["torch_file"].startswith(str(overlay.root)):
        raise RuntimeError(f"the patched worker imported {patched['torch_file']}, not the overlay")

    width = max(len(r["case"]) for r in base["rows"])
    ok = True
    for t in base["threads"]:
        log("")
        log(
            f"threads={t}  (medians in us; left: the BASE process, right: the overlay's; speed = eager / inductor "
            "in that process; code: the generated code alone, without the compiled call's wrappers and guards)"
        )
        log(
            f"{'case':<{width}} | {'eager':>9} {'inductor base':>13} {'code':>9} {'speed':>7} | "
            f"{'eager':>9} {'inductor patched':>16} {'code':>9} {'speed':>7}"
        )
        for b, p in zip(base["rows"], patched["rows"], strict=True):
            sb = b[f"eager_us@{t}"] / b[f"inductor_us@{t}"]
            sp = p[f"eager_us@{t}"] / p[f"inductor_us@{t}"]
            log(
                f"{b['case']:<{width}} | {_fmt_us(b[f'eager_us@{t}'])} {_fmt_us(b[f'inductor_us@{t}']):>13} "
                f"{_fmt_us(b.get(f'code_us@{t}'))} {sb:6.2f}x | {_fmt_us(p[f'eager_us@{t}'])} "
                f"{_fmt_us(p[f'inductor_us@{t}']):>16} {_fmt_us(p.get(f'code_us@{t}'))} {sp:6.2f}x"
            )
    log("")
    log("first call and memory (all threads)")
    log(f"{'case':<{width}} | {'compile s base':>14} | {'compile s patched':>17} | {'peak KiB eager':>14} | {'peak KiB inductor':>17} | eager-equal")
    for b, p in zip(base["rows"], patched["rows"], strict=True):
        equal = "yes" if b["matches_eager"] and p["matches_eager"] else "NO"
        ok &= equal == "yes"
        log(
            f"{b['case']:<{width}} | {b['compile_s']:14.2f} | {p['compile_s']:17.2f} | "
            f"{p['peak_eager'] / 1024:14.0f} | {p['peak_inductor'] / 1024:17.0f} | {equal}"
        )
    for label, side in (("base", base), ("patched", patched)):
        tr = side["trace_ms"]
        log(
            f"dynamo trace time, pipeline, backend eager ({label}): functionals {tr['functionals']:.1f} ms, "
            f"kernels {tr['kernels']:.1f} ms, ratio {tr['functionals'] / tr['kernels']:.2f}x"
        )
    for label, side in (("base", base), ("patched", patched)):
        tc = side["trace_calls"]
        log(
            f"dynamo trace work, pipeline, Python calls ({label}): functionals {tc['functionals']}, "
            f"kernels {tc['kernels']}, ratio {tc['functionals'] / tc['kernels']:.2f}x"
        )
    return ok
