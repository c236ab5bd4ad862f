"""Hypothesis settings for the property tests of test/dynamo/test_tv_*.py.

Profiles: ``ci`` (the default: derandomized, no example database) and
``local`` (ten times the examples), chosen with ``HYPOTHESIS_PROFILE``.  Each
test module asks for its own numbers of examples; the settings are built, not
registered, so that modules in one process do not overwrite each other's
profiles.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings


# The explain phase replays the failing example under a line tracer, and
# Dynamo does not compile frames while a tracer is set.
PHASES = [p for p in Phase if p is not Phase.explain]


def profile(ci_examples: int, local_examples: int) -> settings:
    """The settings HYPOTHESIS_PROFILE names, with these numbers of examples."""
    common = dict(database=None, deadline=None, phases=PHASES, suppress_health_check=[HealthCheck.too_slow])
    profiles = {
        "ci": lambda: settings(derandomize=True, max_examples=ci_examples, **common),
        "local": lambda: settings(max_examples=local_examples, **common),
    }
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    if name not in profiles:
        raise ValueError(f"HYPOTHESIS_PROFILE={name!r}: expected one of {sorted(profiles)}")
    return profiles[name]()
