#!/usr/bin/env python3
"""A ring all-reduce over k parallel rings, alternate rings running the other way.

Each block is cut into k * n chunks; ring t reduces and gathers chunks
[t * n, (t + 1) * n) as a ring does, and at each of its 2(n - 1) steps every ring
moves at once (one batch), so a rank sends to both neighbours at a time and both of
its links carry data. Writes allreduce_rings.json for 2..8 ranks (k = 2).

    python3 examples/algorithms/allreduce_rings.py [-k 2] [-o allreduce_rings.json]
"""
import argparse
import os
import sys

# braid.algorithms is plain Python: from a checkout it runs without the library.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "braid"))
from algorithms import Algorithm, Program  # noqa: E402


def program(n, k):
    p = Program(n, chunks_per_block=k * n)
    for r in p.ranks():
        p.copy(r, "input", 0, "output", 0, chunks=k * n)
    # Step s of every ring as one batch per rank.
    for phase in ("reduce", "gather"):
        for s in range(n - 1):
            with p.batch():
                for r in p.ranks():
                    for t in range(k):
                        d = 1 if t % 2 == 0 else -1
                        base = t * n
                        pos = r if d == 1 else (n - r) % n  # position along ring t
                        nxt, prv = (r + d) % n, (r - d) % n
                        if phase == "reduce":
                            p.send(r, nxt, "output", base + (pos - s) % n)
                            # The ring's last reduction of a chunk completes it: avg
                            # divides there, once.
                            p.recv_reduce(r, prv, "output", base + (pos - s - 1) % n,
                                          final=s == n - 2)
                        else:
                            p.send(r, nxt, "output", base + (pos + 1 - s) % n)
                            p.recv(r, prv, "output", base + (pos - s) % n)
    return p


def build(k=2):
    algo = Algorithm(f"allreduce_rings{k}", "allreduce", ranks="2..8",
                     ops=["sum", "prod", "max", "min", "avg"],
                     comment="examples/algorithms/allreduce_rings.py")
    for n in range(2, 9):
        algo.add(program(n, k))
    return algo


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", type=int, default=2)
    ap.add_argument("-o", "--output", default="allreduce_rings.json")
    args = ap.parse_args()
    print(build(args.k).write(args.output))
