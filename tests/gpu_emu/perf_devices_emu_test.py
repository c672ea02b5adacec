#!/usr/bin/env python3
"""The perf tools' ranks on their devices, over the emulated GPU (tests/gpu_emu).

all_reduce_perf_emu and sendrecv_perf_emu are the perf tools with their device buffers
on the emulated GPU; BRAID_EMU_DEVICES sets how many devices it has. Under braidrun, as
real processes and threads:
- processes x -t threads x -g ranks map to devices as nccl-tests maps them
  (p * nThreads * nGpus + t * nGpus + g), read back from each rank's header line;
- a rank past the last device fails the job at once, naming the device count, well
  before the communicators' timeout;
- --share_gpu 1 (-Q 1) puts every rank on device 0, and the calls of threads that each
  drive their own rank complete, exact;
- sendrecv in place (each rank's receive landing on the buffer it sends) is checked and
  exact, at 1 rank (a send to itself) and at 4 ranks sharing one device.

Usage: perf_devices_emu_test.py BRAIDRUN TOOL_DIR
"""
import os
import re
import subprocess
import sys
import time
import unittest

BRAIDRUN = TOOL_DIR = None
TIMEOUT_MS = 60000
RANK_LINE = re.compile(r"#\s+Rank\s+(\d+) Group\s+\d+ Pid\s+\d+ on\s+\S+ device\s+(\d+) \[cuda\]")


def run(procs, tool, args, devices):
    env = dict(os.environ, BRAID_EMU_DEVICES=str(devices), BRAID_TIMEOUT_MS=str(TIMEOUT_MS))
    cmd = [BRAIDRUN, "-n", str(procs), os.path.join(TOOL_DIR, tool), "-E", "1", "-b", "8",
           "-e", "64K", "-f", "16", "-n", "3", "-w", "1", "-c", "1"] + args
    start = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=240)
    return p.returncode, p.stdout, time.monotonic() - start


def devices_of(text):
    return {int(r): int(d) for r, d in RANK_LINE.findall(text)}


class PerfDevices(unittest.TestCase):
    def expect_ok(self, rc, text):
        self.assertEqual(rc, 0, text[-4000:])
        self.assertIn("Out of bounds values : 0 OK", text, text[-4000:])

    def test_processes_threads_and_ranks_map_as_nccl_tests_maps_them(self):
        rc, text, _ = run(2, "all_reduce_perf_emu", ["-t", "2"], devices=4)
        self.expect_ok(rc, text)
        self.assertEqual(devices_of(text), {0: 0, 1: 1, 2: 2, 3: 3})
        rc, text, _ = run(2, "all_reduce_perf_emu", ["-g", "2"], devices=4)
        self.expect_ok(rc, text)
        self.assertEqual(devices_of(text), {0: 0, 1: 1, 2: 2, 3: 3})

    def test_a_rank_past_the_last_device_fails_at_once_naming_the_count(self):
        rc, text, seconds = run(2, "all_reduce_perf_emu", ["-t", "2"], devices=1)
        self.assertNotEqual(rc, 0, text[-4000:])
        self.assertIn("maps to CUDA device", text)
        self.assertIn("this machine has 1 CUDA device:", text)
        self.assertIn("--share_gpu 1", text)
        self.assertNotIn("did not issue its part", text)
        self.assertLess(seconds, TIMEOUT_MS / 1000 / 2, text[-4000:])

    def test_share_gpu_runs_threads_of_processes_on_device_zero(self):
        rc, text, _ = run(2, "all_reduce_perf_emu", ["-t", "2", "-Q", "1"], devices=1)
        self.expect_ok(rc, text)
        self.assertEqual(devices_of(text), {0: 0, 1: 0, 2: 0, 3: 0})
        self.assertNotIn("group their calls", text)

    def test_sendrecv_in_place_is_exact(self):
        rc, text, _ = run(1, "sendrecv_perf_emu", [], devices=1)
        self.expect_ok(rc, text)
        rc, text, _ = run(2, "sendrecv_perf_emu", ["-t", "2", "-Q", "1"], devices=1)
        self.expect_ok(rc, text)
        rows = [l for l in text.splitlines() if re.match(r"^(\[\d+\] )?\s+\d+\s+\d+\s+float", l)]
        self.assertTrue(rows, text[-4000:])
        for row in rows:  # out-of-place and in-place #wrong are both 0, not N/A
            self.assertNotIn("N/A", row)


if __name__ == "__main__":
    BRAIDRUN, TOOL_DIR = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
