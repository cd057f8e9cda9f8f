"""Where the graph page draws each entity: a radial layout computed here, drawn as SVG by
the template (no script, no library). The centre is the entity asked for, else the one
with the most facts; the others sit on rings by their distance from it in hops, the
unconnected on the outermost ring. Presentation only: the facts come from the engine."""

from __future__ import annotations

import math
from collections import defaultdict, deque
from dataclasses import dataclass

MAX_NODES = 80
RING = 110.0


@dataclass
class Point:
    name: str
    x: float
    y: float
    degree: int
    ring: int


@dataclass
class Line:
    source: Point
    target: Point
    label: str
    invalid: bool


@dataclass
class Drawing:
    points: list[Point]
    lines: list[Line]
    size: float
    left_out: int


def radial(facts, center: str | None = None) -> Drawing:
    """`facts`: objects with `source`, `target`, `name` and `invalid_at`."""
    degree: dict[str, int] = defaultdict(int)
    near: dict[str, set[str]] = defaultdict(set)
    for f in facts:
        degree[f.source] += 1
        degree[f.target] += 1
        near[f.source].add(f.target)
        near[f.target].add(f.source)
    if not degree:
        return Drawing(points=[], lines=[], size=2 * RING, left_out=0)
    ranked = sorted(degree, key=lambda n: (-degree[n], n))
    if center not in degree:
        center = ranked[0]
    kept = {center, *[n for n in ranked if n != center][: MAX_NODES - 1]}
    hops = {center: 0}
    queue = deque([center])
    while queue:
        here = queue.popleft()
        for other in sorted(near[here]):
            if other in kept and other not in hops:
                hops[other] = hops[here] + 1
                queue.append(other)
    outer = max(hops.values()) + 1
    rings: dict[int, list[str]] = defaultdict(list)
    for name in sorted(kept, key=lambda n: (-degree[n], n)):
        rings[hops.get(name, outer)].append(name)
    last = max(rings)
    size = 2 * RING * (last + 1) + 80
    middle = size / 2
    points: dict[str, Point] = {}
    for ring, names in rings.items():
        radius = RING * ring
        turn = 0.5 * ring  # rings start at different angles, so labels overlap less
        for i, name in enumerate(names):
            angle = turn + 2 * math.pi * i / len(names)
            points[name] = Point(
                name=name,
                x=round(middle + radius * math.cos(angle), 1),
                y=round(middle + radius * math.sin(angle), 1),
                degree=degree[name],
                ring=ring,
            )
    lines = [
        Line(points[f.source], points[f.target], f.name, f.invalid_at is not None)
        for f in facts
        if f.source in points and f.target in points
    ]
    return Drawing(
        points=list(points.values()),
        lines=lines,
        size=round(size, 1),
        left_out=len(degree) - len(kept),
    )
