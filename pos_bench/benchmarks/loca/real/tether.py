"""`python -I tether.py <command…>`: run a case's MCP server so that it dies with the thread that started it.

It asks the kernel for SIGKILL when its parent goes (`prctl(PR_SET_PDEATHSIG)`), then replaces itself with the
server (`execvp`; the request survives the exec), so no process is added and the tether's own memory is gone
once the server runs. The parent is the worker thread that launched the episode's servers (fastmcp launches them
from the episode's event-loop thread, `session.py`): when the worker is killed (SIGKILL, out of memory, the run
stopped), every server of its episode is killed by the kernel, not left to be adopted by init.

The launcher names itself in `POS_BENCH_TETHER_PARENT` (its pid): a launcher that died before the request was
in place has already handed the tether to another parent (init, a subreaper), which the tether sees and exits.

Run as a file with `-I` and only the standard library, so it starts in milliseconds and imports nothing of the
project. Linux only; elsewhere it execs the server as it is.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PARENT = "POS_BENCH_TETHER_PARENT"


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: tether.py <command> [args…]")
    launcher = os.environ.pop(PARENT, "")  # the server does not see it
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            sys.exit(f"tether: prctl failed (errno {ctypes.get_errno()})")
        if launcher and os.getppid() != int(launcher):  # the launcher went before the request was in place
            sys.exit(1)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
