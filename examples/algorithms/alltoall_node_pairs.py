#!/usr/bin/env python3
"""An all-to-all that exchanges within pairs of nodes first.

Ranks sit on nodes of L ranks (L = 2 here); nodes 2a and 2a + 1 form a pair, a group
of 2L ranks. Round by round, each rank sends one block and receives one (a batch):
first to and from every other rank of its own group, then group by group to the
others, so the traffic that stays near finishes before the far traffic starts. Round
(d, t) sends to rank t places on in group g + d and receives from t places back in
group g - d, so every send meets its receive in the same round. Writes
alltoall_node_pairs.json for 4 and 8 ranks.

    python3 examples/algorithms/alltoall_node_pairs.py [-o alltoall_node_pairs.json]
"""
import argparse
import os
import sys

# braid.algorithms is plain Python: from a checkout it runs without the library.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "braid"))
from algorithms import Algorithm, Program  # noqa: E402

RANKS_PER_NODE = 2


def program(n, per_node=RANKS_PER_NODE):
    size = 2 * per_node  # a pair of nodes
    groups = n // size
    p = Program(n, chunks_per_block=1)  # block q: to / from rank q
    for r in p.ranks():
        g, i = divmod(r, size)
        p.copy(r, "input", r, "output", r)
        for d in range(groups):
            for t in range(1 if d == 0 else 0, size):
                to = ((g + d) % groups) * size + (i + t) % size
                frm = ((g - d) % groups) * size + (i - t) % size
                with p.batch():
                    p.send(r, to, "input", to)
                    p.recv(r, frm, "output", frm)
    return p


def build():
    algo = Algorithm("alltoall_node_pairs", "alltoall", ranks=[4, 8], in_place=False,
                     comment="examples/algorithms/alltoall_node_pairs.py")
    for n in (4, 8):
        algo.add(program(n))
    return algo


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="alltoall_node_pairs.json")
    print(build().write(ap.parse_args().output))
