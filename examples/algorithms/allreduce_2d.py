#!/usr/bin/env python3
"""A 2-D all-reduce: ranks as a grid of rows x columns (a row: ranks of one node).

1. reduce-scatter along each row: rank (i, j) ends with column group (j + 1) % cols
   reduced over its row;
2. all-reduce that group down each column (a ring reduce-scatter then all-gather
   over the group's `rows` chunks): it is now reduced over every rank;
3. all-gather along each row.

Per rank: 2(cols - 1) + 2(rows - 1) steps instead of a flat ring's 2(n - 1), and the
column phase moves 1/cols of the data between rows (nodes). Writes
allreduce_2d.json for 2..8 ranks (rows: the largest divisor of n up to sqrt(n)).

    python3 examples/algorithms/allreduce_2d.py [-o allreduce_2d.json]
"""
import argparse
import os
import sys

# braid.algorithms is plain Python: from a checkout it runs without the library.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "braid"))
from algorithms import Algorithm, Program  # noqa: E402
from algorithms.patterns import (owned_group, ring_all_gather,  # noqa: E402
                                       ring_reduce_scatter)


def grid(n):
    rows = max(d for d in range(1, int(n ** 0.5) + 1) if n % d == 0)
    return rows, n // rows


def program(n):
    rows, cols = grid(n)
    p = Program(n, chunks_per_block=n)  # cols groups of rows chunks
    groups = [(g * rows, rows) for g in range(cols)]
    for r in p.ranks():
        p.copy(r, "input", 0, "output", 0, chunks=n)
    row_of = [[i * cols + j for j in range(cols)] for i in range(rows)]
    col_of = [[i * cols + j for i in range(rows)] for j in range(cols)]
    for members in row_of:
        ring_reduce_scatter(p, members, groups)
    for j, members in enumerate(col_of):
        first, _ = groups[owned_group(j, cols)]
        chunks = [(first + k, 1) for k in range(rows)]
        ring_reduce_scatter(p, members, chunks)
        ring_all_gather(p, members, chunks)
    for members in row_of:
        ring_all_gather(p, members, groups)
    return p


def build():
    algo = Algorithm("allreduce_2d", "allreduce", ranks="2..8", ops=["sum", "prod", "max", "min"],
                     comment="examples/algorithms/allreduce_2d.py")
    for n in range(2, 9):
        algo.add(program(n))
    return algo


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="allreduce_2d.json")
    print(build().write(ap.parse_args().output))
