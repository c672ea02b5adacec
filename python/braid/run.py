"""``python -m braid.run -n 4 script.py args``: braidrun, from Python.

A thin alias: the arguments go to braidrun unchanged, except that a program
ending in ``.py`` runs under this interpreter, through braid._rank, which also
gives each rank torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) so that an unchanged
``dist.init_process_group("braid")`` finds its rendezvous. See ``braidrun --help``.
"""

import os
import shutil
import socket
import sys
from pathlib import Path

# braidrun's options that take a value (see tools/braidrun/options.cc).
_VALUE_OPTIONS = {"-n", "--np", "--root", "--grace-ms", "-x", "--timeout"}


def find_braidrun():
    """Path of braidrun: $BRAIDRUN, the package's copy, a checkout's build, or PATH."""
    here = Path(__file__).resolve().parent
    candidates = [os.environ.get("BRAIDRUN"), here / "bin" / "braidrun"]
    candidates += [here.parent.parent / b / "tools" / "braidrun" / "braidrun"
                   for b in ("build-py", "build")]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("braidrun")
    if found:
        return found
    raise SystemExit("braid.run: braidrun not found; build it (cmake --build build --target "
                     "braidrun) or set BRAIDRUN")


def program_index(args):
    """Index of the program in braidrun's arguments, or None."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return i + 1 if i + 1 < len(args) else None
        if a in _VALUE_OPTIONS:
            i += 2
            continue
        if not a.startswith("-"):
            return i
        i += 1
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(args):
    """braidrun's full command line for ``python -m braid.run args``."""
    args = list(args)
    i = program_index(args)
    extra = []
    if i is not None and args[i].endswith(".py"):
        args[i:i] = [sys.executable, "-m", "braid._rank"]
        if "MASTER_PORT" not in os.environ:
            extra = ["-x", f"MASTER_PORT={_free_port()}"]
    return [find_braidrun()] + extra + args


def main(argv=None):
    cmd = command(sys.argv[1:] if argv is None else argv)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
