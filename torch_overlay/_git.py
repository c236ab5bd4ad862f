"""Thin wrappers around the git command line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .errors import OverlayError

# Identity and dates are fixed so that commits made by the tooling (the base
# tree) are reproducible, and a user's git config never leaks into them.
FIXED_IDENTITY = {
    "GIT_AUTHOR_NAME": "torch_overlay",
    "GIT_AUTHOR_EMAIL": "torch_overlay@localhost",
    "GIT_COMMITTER_NAME": "torch_overlay",
    "GIT_COMMITTER_EMAIL": "torch_overlay@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}


def require_git() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise OverlayError("git is required but was not found on PATH; install git and retry")
    return exe


def git(
    *args: str,
    cwd: Path,
    check: bool = True,
    env: dict[str, str] | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run git; on failure raise OverlayError carrying git's own message."""
    full_env = dict(os.environ)
    # Never let git discover a repository above a directory we did not mean.
    full_env["GIT_CEILING_DIRECTORIES"] = str(Path(cwd).resolve().parent)
    full_env.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [require_git(), *args], cwd=cwd, env=full_env, input=input, capture_output=True
    )
    if check and proc.returncode != 0:
        msg = proc.stderr.decode(errors="replace").strip() or proc.stdout.decode(errors="replace").strip()
        raise OverlayError(f"`git {' '.join(args)}` failed in {cwd}:\n{msg}")
    return proc


def out(*args: str, cwd: Path, **kw) -> str:
    return git(*args, cwd=cwd, **kw).stdout.decode().strip()
