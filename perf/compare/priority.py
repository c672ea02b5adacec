"""Keeps compare.py's measured programs ahead of other jobs on a shared machine.

nice -20 alone does not: with the kernel's autogroups (sched_autogroup_enabled)
the CPUs are shared between sessions first and nice only orders the tasks
inside one session. Launchers start ranks in sessions of their own (MPICH's
hydra calls setsid), so each new session's group must be raised too.

Keeper raises this process (nice -20, inherited by what it starts) and, from a
background thread, the autogroup of every session that a descendant of this
process leads, a few milliseconds after it appears (before MPI_Init or a
bootstrap is done). It touches no other process, and leaves the caller's own
session alone. Linux only; elsewhere, or without the privilege, it says so
once and does nothing.
"""

import os
import threading


def _children(pid):
    """Pids of pid's children (every thread's), from /proc/PID/task/*/children."""
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        pass  # gone, or a kernel without CONFIG_PROC_CHILDREN
    return kids


def _leads_session(pid):
    try:
        return os.getsid(pid) == pid
    except OSError:
        return False


class Keeper:
    def __init__(self, period_s=0.01):
        self.period_s = period_s
        self.problem = None
        self.raised = set()  # session leaders whose autogroup is at -20
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        try:
            os.nice(-20 - os.nice(0))
        except OSError as e:
            self.problem = f"could not raise priority ({e}): timings see other load"
            return self
        if os.path.exists("/proc/self/autogroup"):
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join()

    def _run(self):
        me = os.getpid()
        while not self._stop.wait(self.period_s):
            for leader in self._new_leaders(me):
                try:
                    with open(f"/proc/{leader}/autogroup", "w") as f:
                        f.write("-20")
                    self.raised.add(leader)
                except OSError as e:
                    if self.problem is None:
                        self.problem = (f"could not raise a launched session's autogroup ({e}): "
                                        "other sessions' jobs share the CPUs equally")

    def _new_leaders(self, me):
        """Descendants of `me` that lead their own session and are not raised yet."""
        seen, todo, leaders = set(), _children(me), []
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            todo += _children(pid)
            if pid not in self.raised and _leads_session(pid):
                leaders.append(pid)
        self.raised &= seen  # forget pids that are gone
        return leaders
