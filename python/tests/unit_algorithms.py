"""braid.algorithms, the DSL that writes schedule files: steps as the format
(docs/algorithms.md) spells them, batches marked per rank, what it refuses, and the
header the runtime reads. Whether a program is right is the simulator's to prove
(tests/integration/user_algorithms_test.py proves and runs the examples).
"""

import json
import unittest

import braid_test_env  # noqa: F401

from braid.algorithms import Algorithm, Program
from braid.algorithms.patterns import ring_all_gather, ring_reduce_scatter


class Dsl(unittest.TestCase):
    def test_a_ring_writes_the_formats_steps(self):
        algo = Algorithm("ring", "allreduce", ranks=[3], sizes=(0, 4096, True, False))
        p = algo.add(Program(3, chunks_per_block=3))
        groups = [(i, 1) for i in range(3)]
        ring_reduce_scatter(p, [0, 1, 2], groups)
        ring_all_gather(p, [0, 1, 2], groups)
        doc = json.loads(algo.to_json())
        self.assertEqual(doc["format"], "braid-schedule")
        self.assertEqual(doc["version"], 1)
        self.assertEqual(doc["sizes"], {"min": 0, "minInclusive": True, "max": 4096,
                                        "maxInclusive": False})
        steps = doc["programs"][0]["ranks"][0]
        self.assertEqual(len(steps), 8)  # 2 (n - 1) sends and as many receives
        self.assertEqual(steps[0], {"op": "send", "src": "output", "srcChunk": 0, "chunks": 1,
                                    "sendPeer": 1})
        self.assertEqual(steps[1]["op"], "recvReduce")
        self.assertEqual((steps[1]["recvPeer"], steps[1]["dstChunk"]), (2, 2))

    def test_a_batch_marks_each_ranks_steps_but_its_last(self):
        p = Program(2)
        with p.batch():
            p.send(0, 1, "input", 0)
            p.recv(0, 1, "output", 0)
            p.send(1, 0, "input", 0)
            p.recv(1, 0, "output", 0)
        for steps in p.steps:
            self.assertEqual([s.get("batchWithNext", False) for s in steps], [True, False])

    def test_bad_steps_are_refused_where_they_are_written(self):
        p = Program(2)
        with self.assertRaises(ValueError):
            p.send(0, 0, "input", 0)  # to itself
        with self.assertRaises(ValueError):
            p.send(0, 2, "input", 0)  # no rank 2
        with self.assertRaises(ValueError):
            p.copy(0, "window", 0, "output", 0)
        algo = Algorithm("x", "allreduce", ranks=[2])
        algo.add(p)
        with self.assertRaises(ValueError):
            algo.add(Program(2))

    def test_window_steps_write_the_formats_window_program(self):
        p = Program(2, windowed=True, lends_input=True)
        p.begin_round(0)
        p.put(0, "input", 0, "windowIn", 0)
        p.signal(0, "ready")
        p.wait(0, 1, "ready")
        p.copy_peer(0, 1, "windowIn", 0, "output", 1, buf_chunk=0)
        p.reduce_peers(0, "windowIn", 0, "output", 0, own_from_buffer=True)
        p.wait(0, None, "finished")
        d = p.to_dict()
        self.assertTrue(d["windowed"])
        self.assertEqual(d["lendsInput"], [True, True])
        self.assertEqual(d["lendsOutput"], [False, False])
        steps = d["ranks"][0]
        self.assertEqual(steps[0], {"op": "beginRound", "writes": True})
        self.assertEqual(steps[3], {"op": "wait", "flag": "ready", "recvPeer": 1})
        self.assertEqual(steps[4], {"op": "copyPeer", "src": "windowIn", "srcChunk": 0,
                                    "dst": "output", "dstChunk": 1, "chunks": 1,
                                    "recvPeer": 1, "bufChunk": 0})
        self.assertTrue(steps[5]["final"] and steps[5]["ownFromBuffer"])
        self.assertEqual(steps[6]["recvPeer"], -1)  # every peer
        with self.assertRaises(ValueError):
            p.send(0, 1, "input", 0)  # a FIFO step in a window program
        with self.assertRaises(ValueError):
            p.signal(0, "go")  # no such flag
        with self.assertRaises(ValueError):
            p.put(0, "input", 0, "output", 0)  # puts go into a window area
        with self.assertRaises(ValueError):
            Program(2).signal(0)  # a window step in a FIFO program

    def test_final_marks_where_avg_divides(self):
        p = Program(2)
        self.assertTrue(p.recv_reduce(0, 1, "output", 0, final=True)["final"])
        self.assertNotIn("final", p.recv_reduce(1, 0, "output", 0))
        self.assertTrue(p.reduce_local(0, "input", 0, "output", 0, final=True)["final"])


if __name__ == "__main__":
    unittest.main()
