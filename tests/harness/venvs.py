"""Virtual environments of their own for outside tools (Hermes; the verifiers of verify-without-ledger.md), hash-pinned.

Each is made once per lock (a stamp names the lock's digest) under a file lock, so parallel
test workers wait for one install instead of racing two pips into one directory.  Outside CI a
machine that cannot install the tool skips the tests that need it; in CI that is a failure.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = ["venv_python"]


def venv_python(venv: Path, lock: Path, what: str) -> Path:
    """The interpreter of ``venv``, with exactly ``lock`` installed (``pip --require-hashes``)."""
    python = venv / "bin" / "python"
    stamp = venv / f".lock-{hashlib.sha256(lock.read_bytes()).hexdigest()[:16]}"
    if python.exists() and stamp.exists():
        return python
    guard = venv.with_name(venv.name + ".lock")
    with open(guard, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # another worker may be installing it: wait for it
        if python.exists() and stamp.exists():
            return python
        try:
            if not python.exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
            pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--require-hashes"]
            subprocess.run([*pip, "-r", str(lock)], check=True, capture_output=True, timeout=900)
        except (subprocess.SubprocessError, OSError) as exc:
            shutil.rmtree(venv, ignore_errors=True)
            detail = getattr(exc, "stderr", b"") or b""
            why = f"cannot install {what} into {venv}: {exc} {detail.decode(errors='replace')[-400:]}"
            if os.environ.get("LEDGER_CI"):
                pytest.fail(why)
            pytest.skip(why)
        for old in venv.glob(".lock-*"):
            old.unlink()
        stamp.touch()
    return python
