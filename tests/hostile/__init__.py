"""The fuzz suite of issue 44: every command's contract under hostile input (see contract.py)."""

import os

from hypothesis import HealthCheck, settings

# CI runs a few minutes of examples; HYPOTHESIS_PROFILE=long runs many more on demand
settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile(
    "long", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
