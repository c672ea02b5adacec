"""One rank of ``python -m braid.run``: torchrun's variables from braidrun's, then the script.

    python -m braid._rank script.py args
"""

import os
import runpy
import sys


def torchrun_environment(env):
    """torchrun's variables derived from braidrun's, keeping any already set."""
    rank = env.get("BRAID_RANK", "0")
    out = {
        "RANK": rank,
        "WORLD_SIZE": env.get("BRAID_WORLD_SIZE", "1"),
        "LOCAL_RANK": env.get("BRAID_LOCAL_RANK", rank),
        "LOCAL_WORLD_SIZE": env.get("BRAID_LOCAL_SIZE", env.get("BRAID_WORLD_SIZE", "1")),
        "MASTER_ADDR": "127.0.0.1",
    }
    return {k: v for k, v in out.items() if k not in env}


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m braid._rank script.py [args]")
    os.environ.update(torchrun_environment(os.environ))
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
