"""The one backoff: how long to wait after failures in a row, the first wait doubled by
each failure after the first, never past a cap, with random jitter where many waiters
should not all try again at once.

It computes a delay and never sleeps: the queue stores its job's next attempt time,
the sign-in throttle refuses inside the window, and the loops wait on their own stop
events. Every wait in pps that grows after failures comes from here (the queue's retries,
a failing background loop, FalkorDB restarting, the stdio relay asking a service that is
down, the sign-in throttle); tests/test_backoff.py holds it. It is the standard library
only, as the client side (the relay) imports it.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

_MOST_DOUBLINGS = 1023
"""2.0 ** 1024 overflows a float; past this many doublings any cap has long been hit."""


def delay(failures: int, first: float, cap: float, jitter: float = 0.0) -> float:
    """Seconds to wait after `failures` failures in a row (fewer than one counts as one):
    `first` after the first, doubled by each after it, plus up to `jitter` at random,
    at most `cap`."""
    grown = first * 2.0 ** min(max(failures, 1) - 1, _MOST_DOUBLINGS)
    if jitter:
        grown += random.uniform(0, jitter)
    return min(grown, cap)


def waits(first: float, cap: float) -> Iterator[float]:
    """The waits of a loop that tries until it stops failing, one per try: `first`,
    then twice as long each time, up to `cap`, and `cap` from then on."""
    for failures in itertools.count(1):
        yield delay(failures, first, cap)
