"""The skill format: agentskills.io ``SKILL.md`` plus supporting files.

A skill is a directory ``skills/<name>/`` whose ``SKILL.md`` is YAML frontmatter
followed by a Markdown body.  This module is pure: it parses, validates and
renders text, and never touches the filesystem, so the store and the auditor
apply exactly the same rules.

The ledger owns the per-skill version.  To stay valid for the reference
validator (``skills-ref``), which rejects unknown top-level keys, it lives in
``metadata.version`` as a decimal string; a legacy top-level ``version`` is read
and migrated on the next write.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ledger.errors import SkillError

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
    "declared_name",
    "ensure_frontmatter",
    "parse_skill_md",
    "slugify",
]

SKILL_MD = "SKILL.md"
SUPPORT_DIRS = ("references", "templates", "scripts", "assets")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_SKILL_MD = 100_000  # characters
MAX_SUPPORT_FILE = 1024 * 1024  # bytes
MAX_PATH_BYTES = 4000  # a bundle path <skill>/<rel>: keeps skills/<path> in any checkout under PATH_MAX (4096)
MAX_COMPONENT_BYTES = 255  # NAME_MAX of every common filesystem
MAX_YAML_DEPTH = 32  # frontmatter nesting; checked on the event stream, before anything recursive runs

# Names Windows reserves for devices, with or without an extension (CON, con.txt, COM1.md …).
_DEVICE_RE = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?\Z", re.I)
_FORBIDDEN = frozenset('<>:"|?*\\') | {chr(c) for c in range(0x20)} | {chr(0x7F)} | {chr(c) for c in range(0x80, 0xA0)}
# Code points HFS+ ignores when comparing names, so ".g\u200cit" is ".git" there (git's is_hfs_dotgit).
_HFS_IGNORED = dict.fromkeys([0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
_FRONTMATTER_RE = re.compile(r"---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)
_FIELD_ORDER = ("name", "description", "license", "compatibility", "allowed-tools", "metadata")
_ALLOWED = frozenset(_FIELD_ORDER)


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
    """Validate a supporting-file path relative to its skill and return its segments.

    The rules are syntactic, so they hold before anything is resolved on disk:
    relative, forward slashes only, no empty, ``.`` or ``..`` segments, and the
    first segment one of :data:`SUPPORT_DIRS`.
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
        raise SkillError(
            f"invalid path {rel[:60]!r}…: supporting paths are limited to {MAX_PATH_BYTES - MAX_NAME - 1} bytes"
        )
    if len(parts) < 2 or parts[0] not in SUPPORT_DIRS:
        raise SkillError(
            f"invalid path {rel!r}: supporting files live under one of " + ", ".join(f"{d}/" for d in SUPPORT_DIRS),
            hint=f"for example 'references/{parts[-1]}'",
        )
    return parts


class _UniqueKeyLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader that refuses duplicate mapping keys instead of keeping the last."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise SkillError("malformed frontmatter: a mapping key is a list or a mapping; keys must be plain words")
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise SkillError(f"malformed frontmatter: duplicate key {key!r}")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@dataclass(frozen=True)
class SkillDoc:
    """A parsed and validated ``SKILL.md``.

    ``body`` is kept byte-exact; the frontmatter is re-rendered canonically by
    :meth:`render`, so every ledger write produces the same bytes for the same
    fields.
    """

    name: str
    description: str
    version: int
    body: str
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)

    def with_version(self, version: int) -> SkillDoc:
        return _replace(self, version=version)

    def with_name(self, name: str) -> SkillDoc:
        return _replace(self, name=name)

    def frontmatter(self) -> dict[str, Any]:
        """The spec-valid frontmatter mapping, version under ``metadata``."""
        meta = {k: v for k, v in self.metadata.items() if k != "version"}
        meta["version"] = str(self.version)
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        for key, value in (
            ("license", self.license),
            ("compatibility", self.compatibility),
            ("allowed-tools", self.allowed_tools),
        ):
            if value is not None:
                out[key] = value
        out["metadata"] = meta
        return out

    def render(self) -> str:
        """Canonical ``SKILL.md`` text: block-style YAML frontmatter, then the body."""
        fm = yaml.safe_dump(
            self.frontmatter(),
            sort_keys=False,
            allow_unicode=True,
            width=1 << 16,
            default_flow_style=False,
        )
        return f"---\n{fm}---\n{self.body}"


def _replace(doc: SkillDoc, **changes: Any) -> SkillDoc:
    return dataclasses.replace(doc, **changes)


def _string_field(fm: Mapping[str, Any], key: str, limit: int, *, required: bool) -> str | None:
    value = fm.get(key)
    if value is None:
        if required:
            raise SkillError(f"malformed frontmatter: missing required field '{key}'")
        return None
    if not isinstance(value, str):
        raise SkillError(
            f"malformed frontmatter: '{key}' must be a string, got {type(value).__name__}",
            hint=f"quote the value of '{key}'",
        )
    if required and not value.strip():
        raise SkillError(f"malformed frontmatter: '{key}' must not be empty")
    if len(value) > limit:
        raise SkillError(
            f"'{key}' is {len(value)} characters; the limit is {limit}",
            hint=f"shorten '{key}'",
        )
    return value


def _version_of(fm: Mapping[str, Any], metadata: Mapping[str, str]) -> int:
    raw: Any = metadata.get("version", fm.get("version", 0))
    if isinstance(raw, bool):
        raw = None
    try:
        version = int(str(raw), 10)
    except ValueError:
        version = -1
    if version < 0:
        raise SkillError(
            f"malformed frontmatter: version {raw!r} is not a non-negative integer",
            hint="the ledger maintains metadata.version; remove it or set a whole number",
        )
    return version


def _bounded(source: str) -> None:
    """Refuse hostile YAML on the parser's event stream, before any recursive composer runs.

    libyaml's parser keeps explicit stacks, but PyYAML's composer and constructor recurse
    once per nesting level (C recursion in the C loader: deep input is a SIGSEGV), and
    aliases let a short document expand without bound.  Frontmatter is flat data.
    """
    depth = 0
    for event in yaml.parse(source, Loader=_UniqueKeyLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise SkillError(f"malformed frontmatter: nested deeper than {MAX_YAML_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            raise SkillError("malformed frontmatter: YAML aliases (*name) are not allowed", hint="write values out")


def _frontmatter(text: str) -> tuple[dict[str, Any], int]:
    match = _FRONTMATTER_RE.match(text)
    if not match:
        raise SkillError(
            "malformed frontmatter: SKILL.md must start with a '---' line and close it with '---'",
            hint="start the file with ---, name: ..., description: ..., ---",
        )
    try:
        _bounded(match.group(1))
        fm = yaml.load(match.group(1), Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        raise SkillError(f"malformed frontmatter: YAML error: {exc}".replace("\n", " ")) from exc
    if not isinstance(fm, dict):
        raise SkillError("malformed frontmatter: it must be a YAML mapping of fields")
    return fm, match.end()


def declared_name(text: str) -> str | None:
    """The name a SKILL.md declares, valid or not (``None`` without frontmatter)."""
    try:
        name = _frontmatter(text)[0].get("name")
    except SkillError:
        return None
    return name if isinstance(name, str) else None


def parse_skill_md(text: str, *, dir_name: str | None = None, set_name: str | None = None) -> SkillDoc:
    """Parse and validate ``SKILL.md`` text against the agentskills.io rules.

    ``dir_name`` (the skill's directory) must equal the declared name when given.
    ``set_name`` replaces the declared name first: upserts key a skill by the
    slug of whatever name it declared.  Raises :class:`SkillError` naming the
    first problem found.
    """
    if len(text) > MAX_SKILL_MD:
        raise SkillError(
            f"SKILL.md is {len(text)} characters; the limit is {MAX_SKILL_MD}",
            hint="move detail into references/ files",
        )
    if text.startswith("\ufeff"):
        raise SkillError("SKILL.md starts with a byte-order mark", hint="save it as UTF-8 without BOM")
    fm, end = _frontmatter(text)
    if set_name is not None:
        fm["name"] = set_name
    unknown = sorted(str(k) for k in fm if k not in _ALLOWED and k != "version")
    if unknown:
        raise SkillError(
            f"malformed frontmatter: unknown field(s) {', '.join(unknown)}",
            hint="the spec allows " + ", ".join(_FIELD_ORDER) + "; put other keys under metadata",
        )
    name = fm.get("name")
    if name is None:
        raise SkillError("malformed frontmatter: missing required field 'name'")
    name = check_name(name)
    if dir_name is not None and name != dir_name:
        raise SkillError(
            f"frontmatter name {name!r} does not match its directory {dir_name!r}",
            hint=f"set 'name: {dir_name}' or rename the directory",
        )
    description = _string_field(fm, "description", MAX_DESCRIPTION, required=True)
    metadata = fm.get("metadata") or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise SkillError(
            "malformed frontmatter: 'metadata' must map strings to strings",
            hint='quote numeric values, e.g. version: "3"',
        )
    return SkillDoc(
        name=name,
        description=description or "",
        version=_version_of(fm, metadata),
        body=text[end:],
        license=_string_field(fm, "license", 1 << 16, required=False),
        compatibility=_string_field(fm, "compatibility", MAX_COMPATIBILITY, required=False),
        allowed_tools=_string_field(fm, "allowed-tools", 1 << 16, required=False),
        metadata={k: v for k, v in metadata.items() if k != "version"},
    )


def ensure_frontmatter(text: str, *, name: str, description: str | None = None) -> str:
    """Give a bare Markdown body default frontmatter; return text with frontmatter unchanged.

    The default description is the body's first non-empty line (without ``#``
    marks), because it is the one line an agent sees in the index.
    """
    if _FRONTMATTER_RE.match(text):
        return text
    if description is None:
        first = next((ln.strip().lstrip("#").strip() for ln in text.splitlines() if ln.strip()), "")
        description = first[:MAX_DESCRIPTION] or f"Skill {name}"
    return SkillDoc(name=name, description=description, version=0, body=text).render()
