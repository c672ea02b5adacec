#!/usr/bin/env python3
"""A direct all-gather over the shared windows of one node: a window program.

Every rank puts its input into its window, raises its ready flag, and copies each
peer's block out of that peer's window once the peer's flag says it is there,
starting with its right neighbour so that no two ranks read the same peer at once;
its finished flag then tells its peers they may reuse the half (and, where a rank
lent its input instead of putting it, that it may return). One round per call; where
a call's blocks exceed a window area, Braid runs the program in passes. Writes
allgather_windows.json for 2..8 ranks; ``--drop-wait`` leaves out rank 1's wait for
rank 0, a race the proof refuses, naming the step.

    python3 examples/algorithms/allgather_windows.py [-o allgather_windows.json]
"""
import argparse
import os
import sys

# braid.algorithms is plain Python: from a checkout it runs without the library.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "braid"))
from algorithms import Algorithm, Program  # noqa: E402


def program(n, drop_wait=False):
    p = Program(n, windowed=True, lends_input=True)
    for r in p.ranks():
        p.begin_round(r)
        p.put(r, "input", 0, "windowIn", 0)
        p.signal(r, "ready")
        p.copy(r, "input", 0, "output", r)
        for i in range(1, n):
            q = (r + i) % n
            if not (drop_wait and r == 1 and q == 0):
                p.wait(r, q, "ready")
            p.copy_peer(r, q, "windowIn", 0, "output", q, buf_chunk=0)
        p.signal(r, "finished")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="allgather_windows.json")
    ap.add_argument("--ranks", default="2..8", help="lo..hi")
    ap.add_argument("--drop-wait", action="store_true", help="write a broken program")
    args = ap.parse_args()
    lo, hi = (int(x) for x in args.ranks.split(".."))
    algo = Algorithm("allgather_windows", "allgather", ranks=f"{lo}..{hi}",
                     comment="a direct all-gather over the shared windows")
    for n in range(lo, hi + 1):
        algo.add(program(n, args.drop_wait))
    algo.write(args.output)


if __name__ == "__main__":
    main()
