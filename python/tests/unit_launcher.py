"""python -m braid.run: what it hands braidrun, and the variables each rank gets."""

import os
import sys
import unittest
from unittest import mock

import braid_test_env  # noqa: F401

from braid import _rank, run


class ProgramIndexTest(unittest.TestCase):
    def test_options_with_values_are_skipped(self):
        self.assertEqual(run.program_index(["-n", "4", "train.py", "-n", "2"]), 2)
        self.assertEqual(run.program_index(["-n4", "--no-prefix", "-x", "A=1", "a.out"]), 4)
        self.assertEqual(run.program_index(["--np", "2", "--", "-weird-name"]), 3)
        self.assertIsNone(run.program_index(["-n", "4"]))

    def test_python_scripts_run_under_this_interpreter_through_the_rank_shim(self):
        with mock.patch.dict(os.environ, {"BRAIDRUN": "/bin/true", "MASTER_PORT": "1234"}):
            cmd = run.command(["-n", "2", "t.py", "--lr", "1"])
        self.assertEqual(cmd, ["/bin/true", "-n", "2", sys.executable, "-m", "braid._rank",
                               "t.py", "--lr", "1"])

    def test_a_free_master_port_is_chosen_once_for_all_ranks(self):
        env = {k: v for k, v in os.environ.items() if k != "MASTER_PORT"}
        env["BRAIDRUN"] = "/bin/true"
        with mock.patch.dict(os.environ, env, clear=True):
            cmd = run.command(["-n", "2", "t.py"])
        self.assertEqual(cmd[1], "-x")
        self.assertRegex(cmd[2], r"^MASTER_PORT=\d+$")

    def test_other_programs_pass_through_unchanged(self):
        with mock.patch.dict(os.environ, {"BRAIDRUN": "/bin/true"}):
            self.assertEqual(run.command(["-n", "2", "./a.out", "x.py"]),
                             ["/bin/true", "-n", "2", "./a.out", "x.py"])


class RankEnvironmentTest(unittest.TestCase):
    def test_torchrun_variables_come_from_braidruns(self):
        env = {"BRAID_RANK": "3", "BRAID_WORLD_SIZE": "4", "BRAID_LOCAL_RANK": "1",
               "BRAID_LOCAL_SIZE": "2"}
        self.assertEqual(_rank.torchrun_environment(env),
                         {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1",
                          "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"})

    def test_variables_already_set_are_kept(self):
        env = {"BRAID_RANK": "0", "BRAID_WORLD_SIZE": "2", "MASTER_ADDR": "10.1.2.3"}
        self.assertNotIn("MASTER_ADDR", _rank.torchrun_environment(env))


if __name__ == "__main__":
    unittest.main()
