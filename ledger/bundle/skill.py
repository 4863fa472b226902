"""The skill format: agentskills.io ``SKILL.md`` plus supporting files.

A skill is a directory ``skills/<name>/`` whose ``SKILL.md`` is YAML frontmatter
followed by a Markdown body.  This module is pure: it parses, validates and
renders text, and never touches the filesystem, so the store and the auditor
apply exactly the same rules.

The ledger owns one value, the per-skill version counter, and keeps every other
byte as written (:mod:`ledger.bundle.frontmatter` edits the counter in place). It lives
in ``metadata.version``, or in ``metadata.ledger-version`` when the author's own
``metadata.version`` is not a whole number; a top-level ``version`` is the
author's and is never touched.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ledger.bundle import frontmatter
from ledger.errors import LedgerError, SkillError

__all__ = [
    "MAX_DESCRIPTION",
    "MAX_NAME",
    "MAX_SKILL_MD",
    "MAX_SUPPORT_FILE",
    "SKILL_MD",
    "SUPPORT_DIRS",
    "SkillDoc",
    "check_bundle_path",
    "check_component",
    "check_name",
    "check_support_path",
    "counter_zeroed",
    "declared_name",
    "parse_skill_md",
    "slugify",
]

SKILL_MD = "SKILL.md"
SUPPORT_DIRS = ("references", "templates", "scripts", "assets")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_SKILL_MD = 1_000_000  # characters (default of limits.skill_md; Hermes's own skills exceed 100,000)
MAX_SUPPORT_FILE = 64 * 1024 * 1024  # bytes (default of limits.file; real skills ship fonts, PDFs, archives)
MAX_PATH_BYTES = 4000  # a bundle path <skill>/<rel>: keeps skills/<path> in any checkout under PATH_MAX (4096)
MAX_COMPONENT_BYTES = 255  # NAME_MAX of every common filesystem

# Names Windows reserves for devices, with or without an extension (CON, con.txt, COM1.md …).
_DEVICE_RE = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?\Z", re.I)
_FORBIDDEN = frozenset('<>:"|?*\\') | {chr(c) for c in range(0x20)} | {chr(0x7F)} | {chr(c) for c in range(0x80, 0xA0)}
# Code points HFS+ ignores when comparing names, so ".g\u200cit" is ".git" there (git's is_hfs_dotgit).
_HFS_IGNORED = dict.fromkeys([0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")


def slugify(name: str) -> str:
    """Map a declared name to its deterministic key: ``"Oracle Manipulation!"`` → ``oracle-manipulation``.

    Accents are stripped (NFKD), everything that is not an ASCII letter or digit
    collapses to one hyphen, and the result is cut to 64 characters.
    """
    ascii_ = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_.lower()).strip("-")[:MAX_NAME].rstrip("-")
    if not slug:
        raise SkillError(
            f"cannot derive a skill name from {name!r}",
            hint="use at least one ASCII letter or digit",
        )
    return slug


def check_name(name: object) -> str:
    """Return ``name`` if it is a valid skill key, else raise with the slug to use instead."""
    if not isinstance(name, str) or not name:
        raise SkillError("skill name must be a non-empty string")
    if len(name) <= MAX_NAME and _NAME_RE.match(name):
        if _DEVICE_RE.match(name):
            raise SkillError(
                f"invalid skill name {name!r}: it is a device name on Windows, so no checkout there could hold it",
                hint=f"try {name + '-skill'!r}",
            )
        return name
    try:
        hint = f"try {slugify(name)!r}"
    except SkillError:
        hint = "use 1-64 characters from a-z, 0-9 and '-'"
    raise SkillError(
        f"invalid skill name {name!r}: names are 1-{MAX_NAME} lowercase ASCII letters, digits and "
        "single hyphens, not starting or ending with a hyphen",
        hint=hint,
    )


def check_component(part: str, where: str) -> str:
    """Refuse a path component that some checkout could not hold faithfully, or that git itself refuses.

    The rules are the union of git's ``verify_path`` (``.git`` in any case, its NTFS short
    name ``git~1``, HFS-ignorable spellings), Windows's (device names, trailing dot or
    space, ``<>:"|?*``, control characters) and the filesystem's 255-byte name limit.
    ANSI escapes are control characters, so no name can repaint a terminal.
    """
    if part in ("", ".", ".."):
        raise SkillError(f"invalid path {where!r}: empty, '.' and '..' segments are not allowed")
    try:
        part.encode("utf-8")
    except UnicodeEncodeError:
        raise SkillError(f"invalid path {where.encode('utf-8', 'backslashreplace')!r}: not valid UTF-8") from None
    bad = sorted({c for c in part if c in _FORBIDDEN})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        raise SkillError(
            f"invalid path {where.encode('unicode_escape').decode()!r}: it contains {shown}",
            hint="use letters, digits, '-', '_' and '.'",
        )
    if part[-1] in ". ":
        raise SkillError(f"invalid path {where!r}: a name may not end with a dot or a space (Windows drops them)")
    if _DEVICE_RE.match(part):
        raise SkillError(f"invalid path {where!r}: {part!r} is a device name on Windows", hint="rename it")
    folded = part.translate(_HFS_IGNORED).casefold()
    if folded in (".git", "git~1"):  # ".git." and ".git " fall to the trailing-dot rule above
        raise SkillError(f"invalid path {where!r}: git refuses a {part!r} path component")
    if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
        raise SkillError(f"invalid path {where!r}: a name is limited to {MAX_COMPONENT_BYTES} bytes")
    if not unicodedata.is_normalized("NFC", part):
        raise SkillError(f"invalid path {where!r}: names must be in Unicode NFC")
    return part


def check_bundle_path(name: str, rel: str) -> None:
    """Check ``<name>/<rel>`` in full before any write is journaled: every component and the total length."""
    full = f"{name}/{rel}"
    size = len(full.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        raise SkillError(
            f"path skills/{full[:60]}… is {size} bytes; bundle paths are limited to {MAX_PATH_BYTES}",
            hint="use a shallower or shorter path",
        )
    for part in rel.split("/"):
        check_component(part, rel)


def check_support_path(rel: str) -> tuple[str, ...]:
    """Validate a file path relative to its skill and return its segments.

    A skill may hold any files and folders (the agentskills spec: "any additional
    files or directories"). The rules are syntactic, so they hold before anything
    is resolved on disk: relative, forward slashes only, every component portable
    (:func:`check_component`), and not ``SKILL.md`` itself, which ``edit`` and
    ``patch`` own. Which folders an *agent* may write is a policy of the agent
    tools, not of the ledger.
    """
    if not isinstance(rel, str) or not rel:
        raise SkillError("file path must be a non-empty string")
    if "\\" in rel:
        raise SkillError(f"invalid path {rel!r}: backslashes are not allowed", hint="use '/'")
    if rel.startswith("/") or re.match(r"[A-Za-z]:", rel):
        raise SkillError(f"invalid path {rel!r}: must be relative to the skill directory")
    if "\x00" in rel:
        raise SkillError(f"invalid path {rel!r}: NUL byte")
    parts = tuple(rel.split("/"))
    for part in parts:
        check_component(part, rel)
    if len(rel.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES - MAX_NAME - 1:
        raise SkillError(f"invalid path {rel[:60]!r}…: file paths are limited to {MAX_PATH_BYTES - MAX_NAME - 1} bytes")
    if parts == (SKILL_MD,):
        raise SkillError(f"{SKILL_MD} is the skill itself", hint="use 'ledger skill edit' or 'patch' to change it")
    return parts


@dataclass(frozen=True)
class SkillDoc:
    """A parsed ``SKILL.md``, kept as its exact text.

    The ledger records a skill as it is: any frontmatter keys, any values. Only its
    version counter is maintained (:meth:`with_counter`, a surgical edit of
    :attr:`text`). Conformance to the agentskills spec is a verdict (``ledger skill lint``),
    not a gate. :meth:`render` is used only for skills the ledger writes from scratch.
    """

    name: str  # as declared ('' if none): the skill's key is its folder
    description: str
    version: int  # the ledger's counter; 0 when the file has none yet
    body: str
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    text: str = ""
    declared_version: Any = None  # an author's own version (top level or metadata), kept as is
    counted: bool = True  # False in a brain whose versions live in the store: the text is never touched
    # What the parse of ``text`` found for the counter: (its metadata key, whether 'metadata' is there).
    # with_counter hands it to set_counter, which would otherwise parse the same text again (issue 35).
    counter: tuple[str, bool] | None = field(default=None, compare=False, repr=False)

    def uncounted(self, version: int = 0) -> SkillDoc:
        """This file in a brain that keeps versions in the store (lineage.md §4.2): ``version`` is the
        store's, whatever the frontmatter says, and :meth:`with_counter` leaves every byte alone."""
        return replace(self, version=version, counted=False)

    def with_counter(self, version: int) -> str:
        """The exact text with only the ledger's counter changed to ``version``.

        A counter that already holds ``version`` is left as written (``'1'``, ``1``, ``"1"``):
        nothing changes, and a bulk snapshot of new skills parses each file once, not four times.
        An uncounted file (:meth:`uncounted`) is returned as it is.
        """
        if not self.counted:
            return self.text
        if version == self.version and version > 0 and self.text:
            return self.text
        return frontmatter.set_counter(self.text, version, parsed=self.counter)

    def render(self) -> str:
        """Canonical ``SKILL.md`` text for a new skill: block-style YAML frontmatter, then the body."""
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        for key, value in (
            ("license", self.license),
            ("compatibility", self.compatibility),
            ("allowed-tools", self.allowed_tools),
        ):
            if value is not None:
                out[key] = value
        meta = {k: v for k, v in self.metadata.items() if k != "version" or not self.counted}
        if self.counted:
            meta["version"] = str(self.version)
        if meta:
            out["metadata"] = meta
        import yaml  # only when a skill is created: read commands never need it

        fm = yaml.safe_dump(out, sort_keys=False, allow_unicode=True, width=1 << 16, default_flow_style=False)
        return f"---\n{fm}---\n{self.body}"


def _text_field(fm: Mapping[str, Any], key: str) -> str | None:
    value = fm.get(key)
    return value if isinstance(value, str) else None


def declared_name(text: str) -> str | None:
    """The name a SKILL.md declares, valid or not (``None`` without frontmatter)."""
    try:
        name = frontmatter.load(text)[0].get("name")
    except SkillError:
        return None
    return name if isinstance(name, str) else None


def parse_skill_md(text: str, *, limit: int = MAX_SKILL_MD) -> SkillDoc:
    """Parse ``SKILL.md`` text as it is; refuse only what the ledger cannot keep a version in.

    Refused: over ``limit`` characters, a byte-order mark, no frontmatter, YAML that is
    not a mapping or is hostile (too deep, aliases, complex or duplicate keys), and a
    ``metadata`` that is not a mapping. Everything else, unknown keys, long
    descriptions, nested metadata, a name that differs from the folder, is kept and
    reported by ``ledger skill lint``.
    """
    if len(text) > limit:
        raise SkillError(
            f"SKILL.md is {len(text)} characters; this brain's limit is {limit}",
            hint="raise limits.skill_md in .ledger/config.json, or move detail into other files",
        )
    if text.startswith("\ufeff"):
        raise SkillError("SKILL.md starts with a byte-order mark", hint="save it as UTF-8 without BOM")
    fm, end = frontmatter.load(text)
    key, version = frontmatter.counter_key(fm)
    meta = fm.get("metadata") if isinstance(fm.get("metadata"), dict) else {}
    declared = fm.get("version", meta.get("version") if frontmatter.whole_number(meta.get("version")) is None else None)
    return SkillDoc(
        name=_text_field(fm, "name") or "",
        description=_text_field(fm, "description") or "",
        version=version,
        body=text[end:],
        license=_text_field(fm, "license"),
        compatibility=_text_field(fm, "compatibility"),
        allowed_tools=_text_field(fm, "allowed-tools"),
        metadata=meta,
        text=text,
        declared_version=declared,
        counter=(key, "metadata" in fm),
    )


def belongs_to(doc: SkillDoc, key: str) -> bool:
    """Whether a SKILL.md may be written under ``key``: it declares no name, or one that slugs to it."""
    if not doc.name:
        return True
    try:
        return slugify(doc.name) == key
    except SkillError:
        return False


def counter_zeroed(counted: bool) -> Callable[[str, bytes], bytes]:
    """A normaliser for three-way merges and reviews: SKILL.md with the ledger's counter set to 0,
    since the counter is the ledger's and is never an edit or a conflict; other files as they are."""

    def zero(rel: str, data: bytes) -> bytes:
        if rel != SKILL_MD or not counted:
            return data
        try:
            return parse_skill_md(data.decode(), limit=1 << 31).with_counter(0).encode()
        except (LedgerError, UnicodeDecodeError):
            return data

    return zero
