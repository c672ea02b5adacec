"""Building blocks for programs (braid.algorithms.Program): rings over any list of ranks.

A ring over ``members`` (ranks in ring order) works on ``groups``, one run of chunks
(first chunk, chunk count) per member. After ring_reduce_scatter, the member at
position p holds group (p + 1) % m reduced over the ring; ring_all_gather starts
from there and leaves every group on every member.
"""

__all__ = ["ring_reduce_scatter", "ring_all_gather", "owned_group"]


def owned_group(position, m):
    """The group the member at ``position`` of a ring of ``m`` holds after a reduce-scatter."""
    return (position + 1) % m


def _ring(members, groups, reverse):
    """(position, rank, next, previous) for each member of the ring, in order."""
    m = len(members)
    if len(groups) != m:
        raise ValueError("a ring needs one group per member")
    step = -1 if reverse else 1
    for p, r in enumerate(members):
        yield p, r, members[(p + step) % m], members[(p - step) % m]


def ring_reduce_scatter(program, members, groups, buf="output", reverse=False):
    m = len(members)
    for p, r, nxt, prv in _ring(members, groups, reverse):
        for s in range(m - 1):
            first, n = groups[(p - s) % m]
            program.send(r, nxt, buf, first, n)
            first, n = groups[(p - s - 1) % m]
            program.recv_reduce(r, prv, buf, first, n)


def ring_all_gather(program, members, groups, buf="output", reverse=False):
    m = len(members)
    for p, r, nxt, prv in _ring(members, groups, reverse):
        for s in range(m - 1):
            first, n = groups[(p + 1 - s) % m]
            program.send(r, nxt, buf, first, n)
            first, n = groups[(p - s) % m]
            program.recv(r, prv, buf, first, n)
