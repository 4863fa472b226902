"""The brain: an agent's skills as a directory with a snapshot store, behind one facade.

A brain is a directory::

    <brain>/skills/<name>/SKILL.md ...   the bundle (what is hashed and committed)
    <brain>/.git/                        the snapshot store (configured bare)
    <brain>/.ledger/                     control: config, lock, journal, cache

:class:`Brain` is a facade over parts, each with its own state (ADR 22), and narrow (ADR 72): as dulwich's
``Repo`` shows ``object_store`` and ``refs``, a brain shows ``root``, its snapshot store ``store`` (read-only),
the paths ``control`` and ``skills_dir``, the outcome log ``evidence`` and the ``categories`` docs/layouts.md
names.  Every other part is private:

- ``_snapshots``: the head and what it records, read once (:mod:`ledger.write.snapshots`);
- ``_lock``: the writer lock (:mod:`ledger.write.lock`);
- ``_writer``: the one write path, under the lock (:mod:`ledger.write.apply`), whose
  file I/O is :mod:`ledger.write.writepath`, the security boundary;
- ``_importer``: a collection recorded as one snapshot (:mod:`ledger.write.importer`);
- ``_reads``: views, status, proofs, history and diffs (:mod:`ledger.brain.reads`);
- ``_mutations``: create … snapshot, each under the lock (:mod:`ledger.brain.mutations`);
- ``_versions``, ``_sealer``, ``_catalog``, ``_keyring``, ``_keys``, ``_cache``, ``_limits``.

Services write through one context, ``with brain.writing(actor=…) as w:`` (:mod:`ledger.brain.writing`),
and read through the named methods below.

This module holds the brain's lifecycle and its public API, each method a delegation to
the part that does the work.  Sharing, import from folders and the chain are
services that take a brain (:mod:`ledger.folders`, :mod:`ledger.sync`, :mod:`ledger.remotes`,
:mod:`ledger.anchoring`); the audit never sees one.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
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
from ledger.brain.writing import Writing
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
from ledger.store.supply import Supply
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


_CHAIN_TYPES: dict[str, tuple[type, ...]] = {
    "rpc": (str,),
    "registry": (str,),
    "agent_id": (str, int),
    "chain_id": (int,),
    "deploy_block": (int,),
    "key": (str,),
}


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
            raise StoreError(
                f"config chain.{key} = {shown(value)} is not "
                f"{'text' if types == (str,) else 'a number' if types == (int,) else 'text or a number'}",
                hint=hint,
            )
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
            raise StoreError(
                f"config limits.{key} = {shown(value)} is not a known positive limit", hint="skill_md, file"
            )
        limits[key] = value
    return limits


class Brain:
    """An open brain.  Use :meth:`init` or :meth:`open`; close it (or use ``with``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._skills_dir = root / "skills"
        self._control = root / CONTROL
        if self._skills_dir.is_symlink():
            raise StoreError(f"{self._skills_dir} is a symbolic link; the brain refuses to follow it")
        config = json.loads((self._control / CONFIG).read_text())
        _check_chain(config.get("chain"))
        self._limits = _limits(config.get("limits") or {})
        gc = config.get("gc") or {}
        self._store = gs.GitStore(root)
        self._cache = th.DigestCache(State(self._control).path(DIGESTS))
        self._versions = Versions(self._store)  # where skill versions live: SKILL.md or the store (ADR 20)
        self._keys = KeyDir(keys_home(config.get("keys")))  # this brain's signing keys (ADR 26)
        self._sealer = Sealer(self._keys, enabled=config.get("signing", True) is not False)  # signs each snapshot
        self._snapshots = Snapshots(self._store, self._control, self._cache, self._versions, self._limits)
        self._lock = WriterLock(self._control, self._cache, settle=lambda recover: self._writer.settle(recover))
        every, size = int(gc.get("every", packing.DEFAULT_EVERY)), int(gc.get("bytes", packing.DEFAULT_BYTES))
        self._writer = Writer(
            root,
            self._control,
            self._store,
            self._snapshots,
            self._lock,
            sealer=self._sealer,
            versions=self._versions,
            limits=self._limits,
            gc=(every, size),
        )
        self._importer = Importer(self._writer)
        self._reads = Reads(root, self._control, self._snapshots, self._versions)
        self._categories = Categories(self._writer, self._reads)  # Hermes categories: members, move, create into one
        self._catalog = Catalog(self._snapshots, self._versions, self._categories)  # the head's listing, for agents
        self._mutations = Mutations(self._writer, self._reads, self._categories)  # create … snapshot
        self._keyring = Keyring(self._writer, lambda: self.update_config(signing=True))  # trust, revoke, rotate
        # signed outcomes per skill version (docs/lineage/evidence.md), from the parts it reads and writes through
        self._evidence = Evidence(self._writer, self._reads, self._catalog, lambda: self.config)
        if (self._control / JOURNAL).exists() or self._writer.journal.stale_ref_locks():
            try:
                with self.locked():
                    pass  # locked() rolls the journal forward
            except StoreError as exc:
                # Reads still work (on the last snapshot); every write refuses with this error.
                self._writer.pending_recovery = exc

    # ------------------------------------------------------------------ what a brain shows (read-only)

    @property
    def store(self) -> gs.GitStore:
        """The snapshot store (:class:`ledger.store.gitstore.GitStore`), as dulwich's ``Repo.object_store``."""
        return self._store

    @property
    def control(self) -> Path:
        """``<brain>/.ledger``: config, lock, journal, cache, the runtimes' records."""
        return self._control

    @property
    def skills_dir(self) -> Path:
        """``<brain>/skills``: the working tree of the bundle."""
        return self._skills_dir

    @property
    def limits(self) -> Mapping[str, int]:
        """The size limits from ``.ledger/config.json`` (``skill_md`` in characters, ``file`` in bytes)."""
        return MappingProxyType(self._limits)

    @property
    def evidence(self) -> Evidence:
        """The outcome log beside the bundle (:class:`ledger.brain.evidence.Evidence`): its reads, and its appends,
        each one snapshot under the writer lock."""
        return self._evidence

    @property
    def categories(self) -> Categories:
        """Hermes categories (docs/layouts.md): ``of()``, ``members(cat)``, ``move(name, cat)``."""
        return self._categories

    # ------------------------------------------------------------------ settings the writer keeps

    @property
    def attribution(self) -> dict[str, str]:
        """Recorded in every snapshot's trailers (see :meth:`acting`)."""
        return self._writer.attribution

    @property
    def allow_invalid(self) -> bool:
        """Record what a command authors even if lint calls it invalid (``--allow-invalid``)."""
        return self._writer.allow_invalid

    @allow_invalid.setter
    def allow_invalid(self, value: bool) -> None:
        self._writer.allow_invalid = value

    @property
    def pending_recovery(self) -> RecoveryError | StoreError | None:
        """A journal the last open could not roll forward: reads work, writes refuse with it."""
        return self._writer.pending_recovery

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def init(
        cls,
        path: str | os.PathLike[str],
        *,
        sign: bool = True,
        passphrase: Passphrase | None = None,
        encrypt: bool = False,
        versions: str = FRONTMATTER,
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
        brain._sealer.passphrase = passphrase
        with brain.locked():
            trust = Trust().apply(founding) if founding else Trust()
            tree = brain._store.root_tree(
                None, trust=brain._store.write_trust(trust), versions=brain._versions.genesis(versions)
            )
            brain._writer.joins.found(tree, founding)
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
        write_json(
            root / CONTROL / CONFIG, {"format": _CONFIG_FORMAT, "keys": keys, **({} if signing else {"signing": False})}
        )

    def checkout_all(self) -> None:
        """Write every skill of the head into an empty working tree (a fresh clone)."""
        with self.locked(), wp.WorkTree(self.root, self._control) as tree:
            if self._reads.skill_names(tree):
                raise StoreError(f"{self._skills_dir} is not empty", hint="clone into a new directory")
            for name, sha in self.head().skills.items():
                tree.materialize(name, self._snapshots.files(sha), self._snapshots.read_blob)

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, search_up: bool = False) -> Brain:
        return cls(find_brain(path, search_up=search_up))

    def close(self) -> None:
        with contextlib.suppress(OSError, LedgerError):
            self._snapshots.save_index()
        self._cache.flush()
        self._store.close()

    def __enter__(self) -> Brain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def config(self) -> dict[str, Any]:
        return json.loads((self._control / CONFIG).read_text())

    def update_config(self, **values: Any) -> None:
        with self.locked():
            cfg = self.config
            cfg.update(values)
            write_json(self._control / CONFIG, cfg)

    @contextlib.contextmanager
    def acting(self, actor: str = "user", **evidence: object) -> Iterator[None]:
        """Attribute the snapshots written inside the block: ``actor`` (agent, curator or user) and evidence
        (``task``, ``session``, ``tool_calls``, ``reason``), recorded as trailers that ``verify`` checks."""
        with self._writer.acting(actor, **evidence):
            yield

    def locked(self, *, recover: bool = True) -> contextlib.AbstractContextManager[None]:
        """Hold the brain's writer lock; waits up to ``LEDGER_LOCK_TIMEOUT`` seconds (default 30).

        Taking it first settles what a killed writer left: its stale git ref locks and temp
        files, and its journal, which is rolled forward (``recover=False`` skips only that).
        """
        return self._lock.locked(recover=recover)

    @contextlib.contextmanager
    def writing(self, actor: str | None = None, **evidence: object) -> Iterator[Writing]:
        """The one write context of a service: hold the writer lock (:meth:`locked`) and, if ``actor`` is given,
        attribute what is written inside to it and its evidence (:meth:`acting`); ``w`` exposes the verbs of the
        write path (:class:`ledger.brain.writing.Writing`).  Built on those two, which stay for callers of the
        Python API (docs/guides/agent-runtime.md)."""
        with self.acting(actor, **evidence) if actor is not None else contextlib.nullcontext(), self.locked():
            yield Writing(self._writer, self._importer, self._keyring)

    # ------------------------------------------------------------------ named reads for services

    def files(self, tree: bytes) -> gs.FileMap:
        """A skill tree's files (path → bytes, executable), remembered by tree id."""
        return self._snapshots.files(tree)

    def read_blob(self, sha: bytes) -> bytes:
        """A blob's bytes."""
        return self._snapshots.read_blob(sha)

    def committed(self, name: str) -> tuple[gs.FileMap, Any]:
        """Skill ``name``'s files and parsed SKILL.md at the head."""
        return self._snapshots.committed(name)

    def categories_tree(self, head: Head) -> bytes | None:
        """``head``'s ``categories/`` tree id, read once per head."""
        return self._snapshots.categories_tree(head)

    def withheld(self) -> dict[str, str]:
        """Skills the head's supply record withholds (quarantined or revoked), with their state."""
        return self._reads.withheld()

    def version_commit(self, name: str, version: int) -> bytes:
        """The commit that recorded ``name`` at ``version``."""
        return self._reads.version_commit(name, version)

    def described(self, head: Head) -> dict[str, tuple[str, str | None]]:
        """Each skill of ``head``: its description and category."""
        return self._reads.described(head)

    def listing(self) -> list[Any]:
        """The head's listing for agents (:meth:`ledger.brain.catalog.Catalog.entries`)."""
        return self._catalog.entries()

    def listing_index(self) -> str:
        """The head's listing as the index agents read (:meth:`ledger.brain.catalog.Catalog.index`)."""
        return self._catalog.index()

    def supply(self, head: Head | None = None) -> Supply:
        """The supply record at ``head`` (default: the head)."""
        return self._writer.supply(head)

    def first_version(self, name: str, head: Head | None = None) -> int:
        """The version a new skill ``name`` starts at (after any retired versions of that name)."""
        return self._writer.first_version(name, head)

    def version_record(self, head: Head) -> dict[str, int] | None:
        """``head``'s versions record, or None where versions live in SKILL.md (ADR 20)."""
        return self._versions.record(head)

    def version_doc(self, head: Head, text: str, **options: Any) -> Any:
        """SKILL.md ``text`` parsed as ``head``'s version mode reads it."""
        return self._versions.doc(head, text, **options)

    def signing_address(self, head: Head) -> str | None:
        """The address that will sign the next snapshot on ``head`` as the acting role (None: unsigned)."""
        key = self._sealer.key_for(self._store.trust_at(head.snap.tree)[1], self._writer.attribution["actor"])
        return None if isinstance(key, tuple) else key.address

    def trust(self) -> Trust:
        """The head's trust set (its ``keys`` record)."""
        return self._writer._trust(self.head())[1]

    def key_for(self, trust: Trust, role: str) -> Any:
        """This machine's key for ``role`` in ``trust``, or why there is none (a ``(why, fix)`` pair)."""
        return self._sealer.key_for(trust, role)

    def has_key(self, actor: str, addresses: set[str]) -> bool:
        """Whether this machine's keys hold one of ``addresses`` for ``actor``."""
        return self._keys.find(actor, addresses) is not None

    @property
    def keys_home(self) -> Path:
        """The directory of this brain's signing keys (ADR 26)."""
        return self._keys.home

    def trusted_keys(self) -> dict[str, Any]:
        """The head's trust set as shown by 'ledger keys' (:meth:`ledger.brain.keyring.Keyring.show`)."""
        return self._keyring.show()

    def allowed_signers(self) -> tuple[list[Any], list[str]]:
        """git's ``allowed_signers`` from the lineage's certifications, and notes on what was left out."""
        return self._keyring.allowed_signers()

    def sibling_pem(self, role: str, scheme: str, address: str | None = None) -> tuple[str, bytes]:
        return self._keyring.sibling_pem(role, scheme, address)

    def signer(self, role: str) -> dict[str, Any]:
        """Who signs as ``role`` here: address and policy."""
        return self._keyring.signer(role)

    def tree_digest(self, tree: bytes, name: str) -> bytes:
        """A stored skill tree's digest, remembered by tree id."""
        return th.tree_digest(self._store, tree, self._cache, name)

    def evals_digest(self, tree: bytes) -> str | None:
        """A stored skill tree's eval-set digest."""
        return th.evals_digest(self._store, tree, self._cache)

    def ask_passphrase(self, prompt: Passphrase) -> None:
        """Ask ``prompt`` for a key's passphrase when one is needed (an interactive CLI)."""
        self._sealer.passphrase = prompt

    @property
    def unsigned(self) -> str | None:
        """Why the last snapshot written was not signed, in a brain that signs (None: it was, or it does not)."""
        return self._sealer.unsigned if self._sealer.enabled else None

    def head(self) -> Head:
        """The head snapshot in memory (:class:`ledger.write.head.Head`)."""
        return self._snapshots.head()

    def recover(self, *, move_aside: bool = False) -> dict[str, Any]:
        """Finish (or report) an interrupted write: the one command that settles a pending journal."""
        return self._writer.recover(move_aside=move_aside)

    def import_collection(self, coll: Collection, **options: Any) -> dict[str, Any]:
        """Record ``coll`` (read by :mod:`ledger.folders.layouts`) as one snapshot, with a report for
        every skill; see :meth:`ledger.write.importer.Importer.import_collection` for the options."""
        return self._importer.import_collection(coll, **options)

    # ------------------------------------------------------------------ reads (brain._reads)

    def list(self) -> list[SkillInfo]:
        return self._reads.list()

    def resolve(self, ref: str) -> str:
        return self._reads.resolve(ref)

    def index(self) -> str:
        return self._reads.index()

    def view(self, name: str, file: str | None = None) -> dict[str, Any]:
        return self._reads.view(name, file)

    def history(self, name: str) -> list[dict[str, Any]]:
        return self._reads.history(name)

    def lint(self, names: list[str] | None = None) -> list[Any]:
        return self._reads.lint(names)

    def status(self) -> Status:
        st = self._reads.status()
        if st.clean:  # remembered for this head, so the quick path can answer the next 'ledger status'
            st.regressions = self._evidence.regressions()
        return st

    def prove(self, rel: str, at: str | None = None) -> InclusionProof:
        return self._reads.prove(rel, at)

    def diff(self, old: str | None = None, new: str | None = None, name: str | None = None) -> Diff:
        return self._reads.diff(old, new, name)

    def show(self, name: str, version: int | None = None) -> str:
        return self._reads.show(name, version)

    # ------------------------------------------------------------------ mutations (brain._mutations)

    def create(
        self, name: str, description: str, body: str = "", *, note: str = "", category: str | None = None
    ) -> Receipt:
        return self._mutations.create(name, description, body, note=note, category=category)

    def upsert(self, text: str, *, name: str | None = None, note: str = "", category: str | None = None) -> Receipt:
        return self._mutations.upsert(text, name=name, note=note, category=category)

    def edit(self, name: str, text: str, *, note: str = "") -> Receipt:
        return self._mutations.edit(name, text, note=note)

    def patch(
        self, name: str, old: str, new: str, *, file: str | None = None, replace_all: bool = False, note: str = ""
    ) -> Receipt:
        return self._mutations.patch(name, old, new, file=file, replace_all=replace_all, note=note)

    def rewrite(
        self,
        name: str,
        change: Callable[[Mapping[str, bytes]], Mapping[str, bytes | None]],
        *,
        operation: str = "edit",
        note: str = "",
    ) -> Receipt:
        return self._mutations.rewrite(name, change, operation=operation, note=note)

    def write_file(self, name: str, rel: str, data: bytes, *, executable: bool = False, note: str = "") -> Receipt:
        return self._mutations.write_file(name, rel, data, executable=executable, note=note)

    def remove_file(self, name: str, rel: str, *, note: str = "") -> Receipt:
        return self._mutations.remove_file(name, rel, note=note)

    def delete(self, name: str, *, note: str = "") -> Receipt:
        return self._mutations.delete(name, note=note)

    def revert(self, name: str, version: int, *, note: str = "") -> Receipt:
        return self._mutations.revert(name, version, note=note)

    def snapshot(self, note: str = "", progress: Callable[[int, int], None] | None = None) -> Receipt:
        return self._mutations.snapshot(note, progress)
