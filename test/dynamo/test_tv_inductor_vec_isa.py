# Owner(s): ["module: inductor"]
"""Which CPU vector ISAs Inductor dry-compiles before its first CPU kernel.

``pick_vec_isa`` returns the best ISA that both the CPU reports and a dry compile
accepts (``VecISA.__bool__``: build a small program with the ISA's flags, then load
it). It asked ``valid_vec_isa_list()``, which dry-compiles every ISA the CPU reports,
only to take the first: on an AVX-512 VNNI machine three ISAs (six builds with the
bf16 and VNNI checks), about 6 s of a cold start where the transform stream's first
pass is 18 s. It now dry-compiles them best first and stops at the one it picks.
The ISA and the extension checks its ``__bool__`` makes next (bf16, VNNI, AMX) are
then one build where each was one (about 2.9 -> 2.2 s there).

Those builds, a second or two with a cold cache, ran when the first C++ kernel
asked for the ISA, after the graph was lowered. ``compile_fx`` now starts the
pick in a thread of its own when it compiles a graph with CPU inputs, so the dry
compile runs alongside the lowering (the classification stream's cold first pass:
about 1.5 s less of 8.8 s with ``dynamic=True``).
"""

import os
import platform
import signal
import sys
import threading
import unittest
from unittest import mock

import torch._dynamo.test_case
from torch._inductor import config, cpp_builder, cpu_vec_isa
from torch._inductor.utils import fresh_cache


# what x86_isa_checker reports: every x86 ISA Inductor has but AMX
CPU_FLAGS = ["avx2", "avx512", "avx512_vnni"]


def _forget_dry_compiles():
    # VecISA.__bool__ and its AVX-512 overrides cache their answers per ISA,
    # and the bf16 and AMX-FP16 accessors what those answers found.
    for fn in (
        cpu_vec_isa.VecISA._VecISA__bool__impl,
        cpu_vec_isa.VecAVX512.__bool__,
        cpu_vec_isa.VecAVX512VNNI.__bool__,
        cpu_vec_isa.VecAMX.__bool__,
        cpu_vec_isa.VecAVX512.is_avx512_bf16_supported,
        cpu_vec_isa.VecAMX.is_amx_fp16_supported,
    ):
        fn.cache_clear()
    cpu_vec_isa.valid_vec_isa_list.cache_clear()


# What an ISA records of its dry compiles on itself.
_RECORDED_ANSWERS = ("_is_avx512_bf16_supported", "_is_amx_fp16_supported", "_built_with_isa")


class FakeX86CpuMixin:
    """An x86 CPU with CPU_FLAGS, neither cpp.simdlen nor ATEN_CPU_CAPABILITY set."""

    def setUp(self):
        super().setUp()
        # What fake dry compiles answer must not outlive the test: the caches,
        # and what an ISA records of them (its bf16 support).
        _forget_dry_compiles()
        self.addCleanup(_forget_dry_compiles)
        saved = [(isa, dict(vars(isa))) for isa in cpu_vec_isa.supported_vec_isa_list]

        def restore():
            for isa, attrs in saved:
                vars(isa).clear()
                vars(isa).update(attrs)

        self.addCleanup(restore)
        # Start from no answer recorded, whatever a real pick earlier in this
        # process found.
        for isa in cpu_vec_isa.supported_vec_isa_list:
            for recorded in _RECORDED_ANSWERS:
                vars(isa).pop(recorded, None)
        env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
        for patch in (
            mock.patch.object(cpu_vec_isa, "x86_isa_checker", return_value=CPU_FLAGS),
            mock.patch.object(platform, "machine", return_value="x86_64"),
            mock.patch.dict(os.environ, env, clear=True),
            config.patch({"cpp.simdlen": None, "cpp.vec_isa_ok": None}),
        ):
            self.enterContext(patch)


class FakeDryCompilesMixin(FakeX86CpuMixin):
    """Dry compiles that all pass, the ISA of each recorded in self.built."""

    def setUp(self):
        super().setUp()
        self.built = []

        def check_build(isa, code):
            self.built.append(str(isa))
            return True

        self.enterContext(mock.patch.object(cpu_vec_isa.VecISA, "check_build", check_build))


ON_LINUX = unittest.skipIf(
    sys.platform != "linux", "the x86 ISAs are dry-compiled on Linux and Windows"
)


@ON_LINUX
class PickVecIsaDryCompilesTests(FakeDryCompilesMixin, torch._dynamo.test_case.TestCase):
    def test_only_the_picked_isa_and_better_ones_are_built(self):
        picked = cpu_vec_isa.pick_vec_isa()
        built = list(self.built)
        # The same ISA as the whole list's first, which builds all of them.
        valid = cpu_vec_isa.valid_vec_isa_list()
        self.assertIs(picked, valid[0])
        ranks = [str(isa) for isa in valid]
        self.assertIn(str(picked), built)
        self.assertLessEqual(
            max(ranks.index(name) for name in built), ranks.index(str(picked))
        )
        # the list itself still dry-compiles every ISA
        self.assertTrue(set(ranks) <= set(self.built))


@ON_LINUX
class PickVecIsaFromEnvironmentTests(FakeDryCompilesMixin, torch._dynamo.test_case.TestCase):
    """ATEN_CPU_CAPABILITY and cpp.simdlen choose from the whole list, as before."""

    def test_capability_from_the_environment(self):
        os.environ["ATEN_CPU_CAPABILITY"] = "avx2"
        self.assertEqual(str(cpu_vec_isa.pick_vec_isa()), "avx2")

    def test_simdlen_from_the_config(self):
        with config.patch({"cpp.simdlen": 256}):
            self.assertEqual(str(cpu_vec_isa.pick_vec_isa()), "avx2")


@ON_LINUX
class DryCompileExtensionsTogetherTests(FakeX86CpuMixin, torch._dynamo.test_case.TestCase):
    """The builds behind check_build, on a CPU with avx512_bf16 and VNNI too."""

    def setUp(self):
        super().setUp()
        # (checks in the source, whether its command line has -mavx512bf16)
        self.builds = []
        self.compiler_lacks = None  # an intrinsic the fake compiler rejects
        test = self

        def build(builder):
            source = builder._sources_args.split()[-1]
            with open(source) as f:
                code = f.read()
            test.builds.append(
                (
                    sorted(
                        name
                        for name in ("__avx_chk", "bf16_chk", "vnni_chk", "__amx_chk")
                        if name in code
                    ),
                    "-mavx512bf16" in builder.get_command_line(),
                )
            )
            if test.compiler_lacks and test.compiler_lacks in code:
                raise RuntimeError(f"the compiler rejects {test.compiler_lacks}")

        for patch in (
            mock.patch.object(cpp_builder.CppBuilder, "build", build),
            mock.patch.object(cpu_vec_isa.VecISA, "_probe_load", return_value=True),
            mock.patch.object(torch.cpu, "_is_avx512_bf16_supported", return_value=True),
            mock.patch.object(torch.cpu, "_is_vnni_supported", return_value=True),
            fresh_cache(),  # no dry compile already in the cache
        ):
            self.enterContext(patch)

    def pick(self):
        isa = cpu_vec_isa.pick_vec_isa()
        return str(isa), isa.is_avx512_bf16_supported()

    def test_the_isa_and_its_extensions_are_one_build(self):
        self.assertEqual(self.pick(), ("avx512 avx512_vnni", True))
        self.assertEqual(self.builds, [(["__avx_chk", "bf16_chk", "vnni_chk"], True)])

    def test_an_extension_the_compiler_lacks_is_checked_alone(self):
        # The joint build fails, then each check is built as without it: the
        # same answers (VNNI picked, bf16 unsupported) as the separate checks give.
        self.compiler_lacks = "_mm512_cvtne2ps_pbh"
        self.assertEqual(self.pick(), ("avx512 avx512_vnni", False))
        self.assertEqual(
            self.builds,
            [
                (["__avx_chk", "bf16_chk", "vnni_chk"], True),
                (["__avx_chk"], False),
                (["bf16_chk"], True),
                (["vnni_chk"], False),
            ],
        )


@ON_LINUX
class PickVecIsaInBackgroundTests(FakeX86CpuMixin, torch._dynamo.test_case.TestCase):
    """The pick runs in a thread of its own, started when a CPU graph's compile starts.

    Every dry compile fails here (check_build answers False), so whatever this
    CPU is, the kernels compiled are scalar ones.
    """

    def setUp(self):
        super().setUp()
        self.checks = []  # (thread name, ISA) of each dry compile
        self.checking = threading.Event()  # set by the first dry compile
        self.gate = threading.Event()  # dry compiles wait for it
        self.gate.set()
        test = self

        def check_build(isa, code):
            test.checks.append((threading.current_thread().name, str(isa)))
            test.checking.set()
            test.assertTrue(test.gate.wait(timeout=30))
            return False

        self.enterContext(mock.patch.object(cpu_vec_isa.VecISA, "check_build", check_build))
        # as in a process that has not picked yet
        self.enterContext(
            mock.patch.object(cpu_vec_isa, "_picked_in_background", None, create=True)
        )

    def join_background_pick(self):
        thread = getattr(cpu_vec_isa, "_picked_in_background", None)
        if thread is not None:
            thread.join(timeout=60)
            self.assertFalse(thread.is_alive())

    def test_a_cpu_graph_starts_the_pick_before_it_is_lowered(self):
        from torch._inductor.graph import GraphLowering

        run = GraphLowering.run
        before_lowering = []

        def lowering(graph, *args):
            # The dry compile has started (it may still run) by the time the
            # graph is lowered; without the thread it starts at the first
            # kernel, after this.
            before_lowering.append(self.checking.wait(timeout=10))
            return run(graph, *args)

        def fn(x):
            return (x * 2).sin()

        x = torch.randn(8)
        torch._dynamo.reset()
        with fresh_cache(), mock.patch.object(GraphLowering, "run", lowering):
            got = torch.compile(fn, backend="inductor", fullgraph=True)(x)
        self.join_background_pick()
        self.assertEqual(got, fn(x))
        self.assertEqual(before_lowering[:1], [True])
        self.assertTrue(self.checks)
        self.assertNotIn(threading.main_thread().name, {name for name, _ in self.checks})
        self.assertIs(cpu_vec_isa.pick_vec_isa(), cpu_vec_isa.invalid_vec_isa)

    def test_a_pick_waits_for_the_one_in_the_background(self):
        # The kernel's pick, asked while the background one dry-compiles, takes
        # its answers: it dry-compiles nothing itself.
        self.gate.clear()
        cpu_vec_isa.pick_vec_isa_in_background()
        self.assertTrue(self.checking.wait(timeout=30))
        threading.Timer(0.2, self.gate.set).start()
        picked = cpu_vec_isa.pick_vec_isa()
        self.join_background_pick()
        self.assertIs(picked, cpu_vec_isa.invalid_vec_isa)
        checks = list(self.checks)
        self.assertEqual({name for name, _ in checks}, {"inductor-pick-vec-isa"})
        # started once per process; the answers are cached
        cpu_vec_isa.pick_vec_isa_in_background()
        self.assertIs(cpu_vec_isa.pick_vec_isa(), cpu_vec_isa.invalid_vec_isa)
        self.join_background_pick()
        self.assertEqual(self.checks, checks)

    @unittest.skipUnless(hasattr(os, "fork"), "needs fork")
    def test_a_child_forked_during_a_background_pick_picks(self):
        # A DataLoader worker forked while its parent's pick runs: the child has
        # no such thread, and must not wait for it.
        self.gate.clear()
        cpu_vec_isa.pick_vec_isa_in_background()
        self.assertTrue(self.checking.wait(timeout=30))
        try:
            pid = os.fork()
            if pid == 0:  # the child
                code = 1
                try:
                    # A pick that waits is ended by the alarm (killed: nonzero).
                    signal.alarm(30)
                    self.gate.set()  # the child's own dry compiles go through
                    cpu_vec_isa.pick_vec_isa()
                    code = 0
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
        finally:
            self.gate.set()
            self.join_background_pick()
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
