"""Settings for the whole suite."""

from __future__ import annotations

from hypothesis import settings

# Hypothesis's default 200 ms deadline per example is a timing threshold: on a loaded 2-core machine a
# correct property failed it. Tests assert behaviour only, so no example has a deadline.
settings.register_profile("rocketq", deadline=None)
settings.load_profile("rocketq")
