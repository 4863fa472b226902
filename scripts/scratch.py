"""A scratch directory for the benchmark scripts that outlasts every brain's background packer.

A write may start a detached packer (ledger.store.packing) that is still repacking a brain's
objects when a benchmark ends; removing the directory under it then fails ("Directory not
empty: 'objects'").  Before removal, wait for each brain's packer lock, as ``ledger gc`` does.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ledger.store.packing import no_repack


@contextlib.contextmanager
def scratch_dir(prefix: str | None = None) -> Iterator[str]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield str(path)
    finally:
        for control in sorted(path.rglob(".ledger")):
            if control.is_dir() and (control / "config.json").exists():
                with no_repack(control):
                    pass  # the packer holds its lock until it is done
        shutil.rmtree(path)
