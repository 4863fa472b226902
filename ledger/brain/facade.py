"""The brain: an agent's skills as a directory with a snapshot store, behind one facade.

A brain is a directory::

    <brain>/skills/<name>/SKILL.md ...   the bundle (what is hashed and committed)
    <brain>/.git/                        the snapshot store (configured bare)
    <brain>/.ledger/                     control: config, lock, journal, cache

:class:`Brain` is a facade over named parts, each with its own state (ADR 22):

- ``brain.store``: the git snapshot store (:mod:`ledger.store.gitstore`);
- ``brain.snapshots``: the head and what it records, read once (:mod:`ledger.write.snapshots`);
- ``brain.lock``: the writer lock (:mod:`ledger.write.lock`);
- ``brain.writer``: the one write path, under the lock (:mod:`ledger.write.apply`), whose
  file I/O is :mod:`ledger.write.writepath`, the security boundary;
- ``brain.importer``: a collection recorded as one snapshot (:mod:`ledger.write.importer`);
- ``brain.reads``: views, status, proofs, history and diffs (:mod:`ledger.brain.reads`);
- ``brain.mutations``: create … snapshot, each under the lock (:mod:`ledger.brain.mutations`);
- ``brain.versions``, ``brain.sealer``, ``brain.categories``, ``brain.catalog``, ``brain.keyring``;
- ``brain.evidence``: signed outcomes of skill versions, beside the bundle (:mod:`ledger.brain.evidence`).

This module holds the brain's lifecycle and its public API, each method a delegation to
the part that does the work.  Sharing, import from folders and the chain are
services in :mod:`ledger.exchange` that take a brain; the audit never sees one.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ledger._fs import DIGESTS
from ledger._json import shown
from ledger._paths import CONFIG, CONTROL, find_brain
from ledger.brain.catalog import Catalog
from ledger.brain.categories import Categories
from ledger.brain.evidence import Evidence
from ledger.brain.keyring import Keyring
from ledger.brain.mutations import Mutations
from ledger.brain.reads import Reads
from ledger.bundle.collection import Collection
from ledger.bundle.merkle import (
    InclusionProof,
)
from ledger.bundle.skill import (
    MAX_SKILL_MD,
    MAX_SUPPORT_FILE,
)
from ledger.errors import (
    LedgerError,
    StoreError,
)
from ledger.signatures.identity import KeyDir, Passphrase, keys_home
from ledger.signatures.trust import Trust
from ledger.store import gitstore as gs
from ledger.store import packing
from ledger.store import treehash as th
from ledger.store.diffs import Diff
from ledger.store.state import State
from ledger.write import writepath as wp
from ledger.write.apply import Writer
from ledger.write.head import Head
from ledger.write.importer import Importer
from ledger.write.journal import JOURNAL, write_json
from ledger.write.lock import WriterLock
from ledger.write.records import NoChangeError, Receipt, RecoveryError, SkillInfo, Status
from ledger.write.sealing import Sealer, founding_keys
from ledger.write.snapshots import Snapshots
from ledger.write.versioning import FRONTMATTER, Versions, check_mode

__all__ = ["Brain", "NoChangeError", "Receipt", "RecoveryError", "SkillInfo", "Status", "find_brain"]

_CONFIG_FORMAT = 1



_CHAIN_TYPES: dict[str, tuple[type, ...]] = {"rpc": (str,), "registry": (str,), "agent_id": (str, int),
                                             "chain_id": (int,), "deploy_block": (int,), "key": (str,)}  # fmt: skip


def _check_chain(chain: Any) -> None:
    """The ``chain`` section of ``.ledger/config.json`` (written by 'ledger chain use|deploy|register'), checked
    for what every reader of it assumes, so a hand edit is refused in words rather than met with a crash."""
    hint = "fix or remove the chain section of .ledger/config.json (then 'ledger chain use RPC' sets it again)"
    if chain is None:
        return
    if not isinstance(chain, dict):
        raise StoreError(f"config chain = {shown(chain)} is not an object", hint=hint)
    for key, types in _CHAIN_TYPES.items():
        value = chain.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            raise StoreError(f"config chain.{key} = {shown(value)} is not "
                             f"{'text' if types == (str,) else 'a number' if types == (int,) else 'text or a number'}",
                             hint=hint)  # fmt: skip
    agent = chain.get("agent_id")
    if isinstance(agent, str):
        try:
            int(agent, 16)
        except ValueError:
            raise StoreError(f"config chain.agent_id = {shown(agent)} is not a hex number", hint=hint) from None


def _limits(given: dict[str, Any]) -> dict[str, int]:
    """Size limits from ``.ledger/config.json`` ``{"limits": {"skill_md": chars, "file": bytes}}``."""
    limits = {"skill_md": MAX_SKILL_MD, "file": MAX_SUPPORT_FILE}
    if not isinstance(given, dict):
        raise StoreError(f"config limits = {shown(given)} is not an object", hint='{"skill_md": N, "file": N}')
    for key, value in given.items():
        if key not in limits or not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise StoreError(f"config limits.{key} = {shown(value)} is not a known positive limit",
                             hint="skill_md, file")  # fmt: skip
        limits[key] = value
    return limits


class Brain:
    """An open brain.  Use :meth:`init` or :meth:`open`; close it (or use ``with``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.skills_dir = root / "skills"
        self.control = root / CONTROL
        if self.skills_dir.is_symlink():
            raise StoreError(f"{self.skills_dir} is a symbolic link; the brain refuses to follow it")
        config = json.loads((self.control / CONFIG).read_text())
        _check_chain(config.get("chain"))
        self.limits = _limits(config.get("limits") or {})
        gc = config.get("gc") or {}
        self.store = gs.GitStore(root)
        self.cache = th.DigestCache(State(self.control).path(DIGESTS))
        self.versions = Versions(self.store)  # where skill versions live: SKILL.md or the store (ADR 20)
        self.keys = KeyDir(keys_home(config.get("keys")))  # this brain's signing keys (ADR 26)
        self.sealer = Sealer(self.keys, enabled=config.get("signing", True) is not False)  # signs each snapshot
        self.snapshots = Snapshots(self.store, self.control, self.cache, self.versions, self.limits)
        self.lock = WriterLock(self.control, self.cache, settle=lambda recover: self.writer.settle(recover))
        every, size = int(gc.get("every", packing.DEFAULT_EVERY)), int(gc.get("bytes", packing.DEFAULT_BYTES))
        self.writer = Writer(root, self.control, self.store, self.snapshots, self.lock, sealer=self.sealer,
                             versions=self.versions, limits=self.limits, gc=(every, size))  # fmt: skip
        self.importer = Importer(self.writer)
        self.reads = Reads(root, self.control, self.snapshots, self.versions)
        self.categories = Categories(self.writer, self.reads)  # Hermes categories: members, move, create into one
        self.catalog = Catalog(self.snapshots, self.versions, self.categories)  # the head's listing, for agents
        self.mutations = Mutations(self.writer, self.reads, self.categories)  # create … snapshot
        self.keyring = Keyring(self.writer, lambda: self.update_config(signing=True))  # trust, revoke, rotate, adopt
        self.evidence = Evidence(self)  # signed outcomes per skill version (docs/lineage.md §14)
        if (self.control / JOURNAL).exists() or self.writer.journal.stale_ref_locks():
            try:
                with self.locked():
                    pass  # locked() rolls the journal forward
            except StoreError as exc:
                # Reads still work (on the last snapshot); every write refuses with this error.
                self.writer.pending_recovery = exc

    # ------------------------------------------------------------------ settings the writer keeps

    @property
    def attribution(self) -> dict[str, str]:
        """Recorded in every snapshot's trailers (see :meth:`acting`)."""
        return self.writer.attribution

    @property
    def allow_invalid(self) -> bool:
        """Record what a command authors even if lint calls it invalid (``--allow-invalid``)."""
        return self.writer.allow_invalid

    @allow_invalid.setter
    def allow_invalid(self, value: bool) -> None:
        self.writer.allow_invalid = value

    @property
    def pending_recovery(self) -> RecoveryError | StoreError | None:
        """A journal the last open could not roll forward: reads work, writes refuse with it."""
        return self.writer.pending_recovery

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def init(
        cls, path: str | os.PathLike[str], *, sign: bool = True, passphrase: Passphrase | None = None,
        encrypt: bool = False, versions: str = FRONTMATTER,
    ) -> Brain:
        """A new brain whose first snapshot trusts this machine's keys (made if missing) and is signed
        by its user key; ``sign=False`` makes an unsigned brain (``ledger sign --adopt`` signs it later).
        ``versions="store"`` keeps skill versions out of SKILL.md, so every file stays as written."""
        check_mode(versions)
        root = Path(path).absolute()
        if (root / CONTROL / CONFIG).exists():
            raise StoreError(f"{root} is already a brain")
        if (root / ".git").exists():
            raise StoreError(
                f"{root} already has a .git directory",
                hint="choose an empty or new directory for the brain",
            )
        if (root / "skills").exists() and any((root / "skills").iterdir()):
            raise StoreError(
                f"{root}/skills already has content",
                hint="init an empty directory, then import skills and run 'ledger snapshot'",
            )
        founding = founding_keys(KeyDir(keys_home()), passphrase, encrypt=encrypt) if sign else []
        cls.create_empty(root, signing=sign)
        brain = cls(root)
        brain.sealer.passphrase = passphrase
        with brain.locked():
            trust = Trust().apply(founding) if founding else Trust()
            tree = brain.store.root_tree(None, trust=brain.store.write_trust(trust),
                                         versions=brain.versions.genesis(versions))  # fmt: skip
            brain.writer.joins.found(tree, founding)
        return brain

    @staticmethod
    def create_empty(root: Path, *, signing: bool = True) -> None:
        """The layout of a brain with no snapshot yet: ``init`` adds the first, ``clone`` fetches them."""
        (root / "skills").mkdir(parents=True, exist_ok=True)
        (root / CONTROL).mkdir(exist_ok=True)
        gs.GitStore.init(root).close()
        (root / CONTROL / ".gitignore").write_text("*\n")
        # The keys directory is recorded, so a runtime started with a minimal environment (an MCP
        # client's) signs with the same keys as the shell that made the brain (ADR 26).
        keys = str(keys_home().absolute())
        write_json(root / CONTROL / CONFIG,
                   {"format": _CONFIG_FORMAT, "keys": keys, **({} if signing else {"signing": False})})  # fmt: skip

    def checkout_all(self) -> None:
        """Write every skill of the head into an empty working tree (a fresh clone)."""
        with self.locked(), wp.WorkTree(self.root, self.control) as tree:
            if self.reads.skill_names(tree):
                raise StoreError(f"{self.skills_dir} is not empty", hint="clone into a new directory")
            for name, sha in self.head().skills.items():
                tree.materialize(name, self.snapshots.files(sha), self.snapshots.read_blob)

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, search_up: bool = False) -> Brain:
        return cls(find_brain(path, search_up=search_up))

    def close(self) -> None:
        with contextlib.suppress(OSError, LedgerError):
            self.snapshots.save_index()
        self.cache.flush()
        self.store.close()

    def __enter__(self) -> Brain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def config(self) -> dict[str, Any]:
        return json.loads((self.control / CONFIG).read_text())

    def update_config(self, **values: Any) -> None:
        with self.locked():
            cfg = self.config
            cfg.update(values)
            write_json(self.control / CONFIG, cfg)

    @contextlib.contextmanager
    def acting(self, actor: str = "user", **evidence: object) -> Iterator[None]:
        """Attribute the snapshots written inside the block: ``actor`` (agent, curator or user) and evidence
        (``task``, ``session``, ``tool_calls``, ``reason``), recorded as trailers that ``verify`` checks."""
        with self.writer.acting(actor, **evidence):
            yield

    def locked(self, *, recover: bool = True) -> contextlib.AbstractContextManager[None]:
        """Hold the brain's writer lock; waits up to ``LEDGER_LOCK_TIMEOUT`` seconds (default 30).

        Taking it first settles what a killed writer left: its stale git ref locks and temp
        files, and its journal, which is rolled forward (``recover=False`` skips only that).
        """
        return self.lock.locked(recover=recover)

    def head(self) -> Head:
        """The head snapshot in memory (:class:`ledger.write.head.Head`)."""
        return self.snapshots.head()

    def recover(self, *, move_aside: bool = False) -> dict[str, Any]:
        """Finish (or report) an interrupted write: the one command that settles a pending journal."""
        return self.writer.recover(move_aside=move_aside)

    def import_collection(self, coll: Collection, **options: Any) -> dict[str, Any]:
        """Record ``coll`` (read by :mod:`ledger.exchange.layouts`) as one snapshot, with a report for
        every skill; see :meth:`ledger.write.importer.Importer.import_collection` for the options."""
        return self.importer.import_collection(coll, **options)

    # ------------------------------------------------------------------ reads (brain.reads)

    def list(self) -> list[SkillInfo]:
        return self.reads.list()

    def resolve(self, ref: str) -> str:
        return self.reads.resolve(ref)

    def index(self) -> str:
        return self.reads.index()

    def view(self, name: str, file: str | None = None) -> dict[str, Any]:
        return self.reads.view(name, file)

    def history(self, name: str) -> list[dict[str, Any]]:
        return self.reads.history(name)

    def lint(self, names: list[str] | None = None) -> list[Any]:
        return self.reads.lint(names)

    def status(self) -> Status:
        st = self.reads.status()
        if st.clean:  # remembered for this head, so the quick path can answer the next 'ledger status'
            st.regressions = self.evidence.regressions()
        return st

    def prove(self, rel: str, at: str | None = None) -> InclusionProof:
        return self.reads.prove(rel, at)

    def diff(self, old: str | None = None, new: str | None = None, name: str | None = None) -> Diff:
        return self.reads.diff(old, new, name)

    def show(self, name: str, version: int) -> str:
        return self.reads.show(name, version)

    # ------------------------------------------------------------------ mutations (brain.mutations)

    def create(self, name: str, description: str, body: str = "", *, note: str = "",
               category: str | None = None) -> Receipt:  # fmt: skip
        return self.mutations.create(name, description, body, note=note, category=category)

    def upsert(self, text: str, *, name: str | None = None, note: str = "", category: str | None = None) -> Receipt:
        return self.mutations.upsert(text, name=name, note=note, category=category)

    def edit(self, name: str, text: str, *, note: str = "") -> Receipt:
        return self.mutations.edit(name, text, note=note)

    def patch(self, name: str, old: str, new: str, *, file: str | None = None, replace_all: bool = False,
              note: str = "") -> Receipt:  # fmt: skip
        return self.mutations.patch(name, old, new, file=file, replace_all=replace_all, note=note)

    def rewrite(self, name: str, change: Callable[[Mapping[str, bytes]], Mapping[str, bytes | None]], *,
                operation: str = "edit", note: str = "") -> Receipt:  # fmt: skip
        return self.mutations.rewrite(name, change, operation=operation, note=note)

    def write_file(self, name: str, rel: str, data: bytes, *, executable: bool = False, note: str = "") -> Receipt:
        return self.mutations.write_file(name, rel, data, executable=executable, note=note)

    def remove_file(self, name: str, rel: str, *, note: str = "") -> Receipt:
        return self.mutations.remove_file(name, rel, note=note)

    def delete(self, name: str, *, note: str = "") -> Receipt:
        return self.mutations.delete(name, note=note)

    def revert(self, name: str, version: int, *, note: str = "") -> Receipt:
        return self.mutations.revert(name, version, note=note)

    def snapshot(self, note: str = "", progress: Callable[[int, int], None] | None = None) -> Receipt:
        return self.mutations.snapshot(note, progress)

