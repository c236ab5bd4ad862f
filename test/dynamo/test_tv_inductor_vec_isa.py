# Owner(s): ["module: inductor"]
"""Which CPU vector ISAs Inductor dry-compiles before its first CPU kernel.

``pick_vec_isa`` returns the best ISA that both the CPU reports and a dry compile
accepts (``VecISA.__bool__``: build a small program with the ISA's flags, then load
it). It asked ``valid_vec_isa_list()``, which dry-compiles every ISA the CPU reports,
only to take the first: on an AVX-512 VNNI machine three ISAs (six builds with the
bf16 and VNNI checks), about 6 s of a cold start where the transform stream's first
pass is 18 s. It now dry-compiles them best first and stops at the one it picks.
"""

import os
import platform
import sys
import unittest
from unittest import mock

import torch._dynamo.test_case
from torch._inductor import config, cpu_vec_isa


# what x86_isa_checker reports: every x86 ISA Inductor has but AMX
CPU_FLAGS = ["avx2", "avx512", "avx512_vnni"]


def _forget_dry_compiles():
    # VecISA.__bool__ and its AVX-512 overrides cache their answers per ISA.
    for fn in (
        cpu_vec_isa.VecISA._VecISA__bool__impl,
        cpu_vec_isa.VecAVX512.__bool__,
        cpu_vec_isa.VecAVX512VNNI.__bool__,
        cpu_vec_isa.VecAMX.__bool__,
    ):
        fn.cache_clear()
    cpu_vec_isa.valid_vec_isa_list.cache_clear()


class FakeDryCompilesMixin:
    """An x86 CPU with CPU_FLAGS whose dry compiles all pass, recorded in self.built."""

    def setUp(self):
        super().setUp()
        # What the fake dry compiles answer must not outlive the test: the
        # caches, and what an ISA records of them (its bf16 support).
        _forget_dry_compiles()
        self.addCleanup(_forget_dry_compiles)
        saved = [(isa, dict(vars(isa))) for isa in cpu_vec_isa.supported_vec_isa_list]

        def restore():
            for isa, attrs in saved:
                vars(isa).clear()
                vars(isa).update(attrs)

        self.addCleanup(restore)
        self.built = []

        def check_build(isa, code):
            self.built.append(str(isa))
            return True

        env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
        for patch in (
            mock.patch.object(cpu_vec_isa.VecISA, "check_build", check_build),
            mock.patch.object(cpu_vec_isa, "x86_isa_checker", return_value=CPU_FLAGS),
            mock.patch.object(platform, "machine", return_value="x86_64"),
            mock.patch.dict(os.environ, env, clear=True),
            config.patch({"cpp.simdlen": None, "cpp.vec_isa_ok": None}),
        ):
            self.enterContext(patch)


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


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
