"""A scratch directory for the benchmark scripts that outlasts every brain's background packer.

A write may start a detached packer (ledger.store.packing) that is still repacking a brain's
objects when a benchmark ends; removing the directory under it then fails ("Directory not
empty: 'objects'").  Before removal, wait for each brain's packer lock, as ``ledger gc`` does.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ledger.store.packing import no_repack


def wait_for_packer(brain: Path) -> None:
    """Return once ``brain``'s background packer, if one runs, is done: the brain may then be removed."""
    control = brain / ".ledger"
    if control.is_dir() and (control / "config.json").exists():
        with no_repack(control):
            pass  # the packer holds its lock until it is done


def remove_brain(path: Path) -> None:
    """Delete a directory that may hold a brain whose detached packer is still starting or running: it
    takes .ledger/gc.lock only once it runs, so wait for the lock and retry until the tree is gone."""
    for _ in range(100):
        wait_for_packer(path)
        try:
            shutil.rmtree(path)
            return
        except OSError:
            time.sleep(0.1)
    shutil.rmtree(path)


@contextlib.contextmanager
def scratch_dir(prefix: str | None = None) -> Iterator[str]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield str(path)
    finally:
        for control in sorted(path.rglob(".ledger")):
            wait_for_packer(control.parent)
        shutil.rmtree(path)
