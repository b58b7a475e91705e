"""What keeps a LOCA episode from reaching what it must not: the run's secrets, the ground truth, the machine.

- `scrubbed_environ`: the environment minus API keys, tokens, passwords and cloud credentials; every MCP server
  starts from it, so model-written code in python_execute / terminal never sees the run's secrets.
- `sandbox_argv`: a bubblewrap prefix for the code-executing servers: only the interpreter, the system
  libraries, the server's own files and the agent workspace are mounted, no network.
- `Vault`: moves everything of the task folder except what the servers need (the agent workspace, the mock
  services' DB, logs) out of the task folder and locks it (mode 000) for the episode; the checker gets it back.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

_SECRET = re.compile(
    r"API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|^AWS_|^AZURE_|^GOOGLE_APPLICATION", re.IGNORECASE
)
SERVER_NEEDS = ("agent_workspace", "local_db", "logs", "memory_data", ".pdf_tools_tempfiles")
"""Task-folder entries the MCP servers read or write during the episode; the rest waits in the vault."""


def scrubbed_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`environ` (default: this process's) without variables whose names look like secrets."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if not _SECRET.search(k)}


def bwrap_path() -> str | None:
    """The bubblewrap binary, when installed (Debian `bubblewrap`)."""
    return shutil.which("bwrap")


def _system_mounts() -> list[str]:
    argv: list[str] = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"):
        path = Path(top)
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            argv += ["--ro-bind", top, top]
    return argv


def sandbox_argv(workspace: Path, readable: Sequence[Path], bwrap: str) -> list[str]:
    """The bwrap prefix: system dirs, this interpreter (base and venv) and `readable` read-only, `workspace`
    writable and the working directory, a private /tmp, no network, killed with its parent."""
    argv = [bwrap, "--die-with-parent", "--unshare-all", *_system_mounts()]
    seen: set[str] = set()
    for path in (Path(sys.base_prefix), Path(sys.prefix), *readable):
        resolved = str(Path(path).resolve())
        if resolved not in seen and Path(resolved).exists():
            seen.add(resolved)
            argv += ["--ro-bind", resolved, resolved]
    ws = str(workspace.resolve())
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", ws, ws, "--chdir", ws]
    return argv


class Vault:
    """Holds a task folder's ground truth (and everything else the servers do not need) apart during an episode."""

    def __init__(self, task_dir: Path, vault_dir: Path):
        self.task_dir, self.vault_dir = Path(task_dir), Path(vault_dir)

    @property
    def locked(self) -> bool:
        return self.vault_dir.exists()

    def lock(self) -> list[str]:
        """Move the entries out and make the vault unreadable; returns the names moved."""
        if self.locked:
            return []
        self.vault_dir.mkdir(parents=True)
        moved = sorted(p.name for p in self.task_dir.iterdir() if p.name not in SERVER_NEEDS)
        for name in moved:
            shutil.move(str(self.task_dir / name), str(self.vault_dir / name))
        self.vault_dir.chmod(0o000)
        return moved

    def unlock(self) -> None:
        """Put every entry back where the upstream checker expects it."""
        if not self.locked:
            return
        self.vault_dir.chmod(0o700)
        for entry in sorted(self.vault_dir.iterdir()):
            shutil.move(str(entry), str(self.task_dir / entry.name))
        self.vault_dir.rmdir()
