"""SKILL.md frontmatter: found, parsed within bounds, and edited surgically.

The ledger maintains one value in a skill's frontmatter, its version counter,
and must keep every other byte as the author wrote it: key order, quoting,
comments, flow lists, nested maps, CRLF, trailing whitespace.  So the counter is
changed in place, at the character offsets the YAML parser reports for it, and
nothing is ever parsed and re-rendered.

Where the counter lives (docs/layouts.md): ``metadata.version`` when that is
absent or a whole number; when the author uses ``metadata.version`` for their own
version (``"1.0"``, semver), the ledger's counter is ``metadata.ledger-version``.
A top-level ``version:`` is always the author's and is never touched.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from ledger._json import shown
from ledger.errors import SkillError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "COUNTER_LINE",
    "MAX_YAML_DEPTH",
    "as_json",
    "bounded",
    "counter_key",
    "counter_line",
    "load",
    "set_aside",
    "set_counter",
    "split",
    "whole_number",
]

MAX_YAML_DEPTH = 32  # nesting; checked on the event stream, before anything recursive runs
_RE = re.compile(r"---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)


@functools.cache
def _yaml() -> tuple[Any, type, type]:
    """PyYAML, the fastest safe loader, and that loader refusing duplicate keys.

    Imported on first use: read commands that never parse YAML (status, a cached list)
    start ~20 ms sooner without it.
    """
    import yaml

    base = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader

    class UniqueKeyLoader(base):  # type: ignore[misc,valid-type]
        """SafeLoader that refuses duplicate and non-scalar mapping keys instead of keeping the last."""

    def construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise SkillError(
                    "malformed frontmatter: a mapping key is a list or a mapping; keys must be plain words"
                )
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                raise SkillError(f"malformed frontmatter: duplicate key {key!r}")
            seen.add(key)
        return loader.construct_mapping(node, deep=deep)

    UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return yaml, base, UniqueKeyLoader


def split(text: str) -> tuple[int, int, int] | None:
    """``(start, end, body)`` offsets of the frontmatter's YAML and of the body, or ``None``."""
    match = _RE.match(text)
    return (match.start(1), match.end(1), match.end()) if match else None


def bounded(source: str) -> None:
    """Refuse hostile YAML on the parser's event stream, before any recursive composer runs.

    libyaml's parser keeps explicit stacks, but PyYAML's composer and constructor recurse
    once per nesting level (C recursion in the C loader: deep input is a SIGSEGV), and
    aliases let a short document expand without bound.  Frontmatter is data.
    """
    if "*" not in source and sum(map(source.count, "-:?[{")) < MAX_YAML_DEPTH:
        return  # every collection needs its own indicator (- : ? [ {), so fewer cannot nest too deep
    yaml, _, unique = _yaml()
    try:
        _walk_events(yaml, yaml.parse(source, Loader=unique))
    except yaml.YAMLError:
        # libyaml scans flow collections ahead of its events and refuses deep ones with a
        # limit and wording of its own (PyYAML 6.0.4: depth 1,000).  Our verdict must not
        # depend on that: the pure-Python parser, whose scanner keeps no such limit, says
        # whether our own bound is the reason; any other error is the caller's YAML error.
        _walk_events(yaml, yaml.parse(source, Loader=yaml.SafeLoader))
        raise


def _walk_events(yaml: Any, events: Any) -> None:
    depth = 0
    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise SkillError(f"malformed frontmatter: nested deeper than {MAX_YAML_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            raise SkillError("malformed frontmatter: YAML aliases (*name) are not allowed", hint="write values out")


def load(text: str) -> tuple[dict[str, Any], int]:
    """The frontmatter mapping and the offset where the body starts; refuses what is not one."""
    found = split(text)
    if found is None:
        if re.match(r"---[ \t]*\r?\n", text):
            raise SkillError(
                "malformed frontmatter: the '---' on line 1 is never closed by a '---' line",
                hint="end the frontmatter with a line holding only ---, before the body",
            )
        raise SkillError(
            "malformed frontmatter: SKILL.md must start with a '---' line and close it with '---'",
            hint="start the file with ---, name: ..., description: ..., ---",
        )
    start, end, body = found
    source = text[start:end]
    yaml, _, unique = _yaml()
    try:
        bounded(source)
        fm = yaml.load(source, Loader=unique) if source.strip() else {}
    except yaml.YAMLError as exc:
        raise SkillError(f"malformed frontmatter: YAML error: {exc}".replace("\n", " ")) from exc
    if not isinstance(fm, dict):
        raise SkillError("malformed frontmatter: it must be a YAML mapping of fields")
    return fm, body


_CORE = (  # how YAML 1.2's core schema (most parsers outside Python) reads a plain scalar, in this order
    ("null", re.compile(r"(?:~|null|Null|NULL|)\Z")),
    ("bool", re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z")),
    ("int", re.compile(r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z")),
    (
        "float",
        re.compile(
            r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
            r"|\.(?:nan|NaN|NAN))\Z"
        ),
    ),
)


def _core(text: str) -> tuple[str, Any]:
    """A plain scalar as YAML 1.2's core schema reads it: (kind, value); kind ``str`` for the rest."""
    kind = next((k for k, pattern in _CORE if pattern.match(text)), "str")
    if kind == "str":
        return kind, text
    if kind == "null":
        return kind, None
    if kind == "bool":
        return kind, text[0] in "tT"
    if kind == "int":
        return kind, int(text[2:], 8) if text.startswith("0o") else int(text, 16 if text.startswith("0x") else 10)
    if text.lower().endswith((".inf", ".nan")):
        return kind, float(text.lower().replace(".", ""))
    return kind, float(text)


@functools.cache
def _json_loader() -> type:
    """The unique-key loader with YAML timestamps kept as the text written, refusing a plain scalar that YAML
    1.1 (PyYAML) and YAML 1.2's core schema read as two values (see :func:`as_json`)."""
    yaml, _, unique = _yaml()
    safe = yaml.constructor.SafeConstructor

    class AsWritten(unique):  # type: ignore[misc,valid-type]
        """A timestamp (``2024-01-15``) is the scalar as written: JSON has no date, YAML 1.2 reads it as text."""

    def one_reading(construct: Any) -> Any:
        def constructor(loader: Any, node: Any) -> Any:
            value = construct(loader, node)
            if not node.style:  # a plain scalar (None, or "" from libyaml): quoted and block ones are text to all
                kind, core = _core(node.value)
                nan = core != core and value != value
                same = (
                    kind == "str"
                    if isinstance(value, str)
                    else (kind != "str" and type(core) is type(value) and (core == value or nan))
                )
                if not same:
                    raise SkillError(
                        f"frontmatter value {node.value!r} reads as {value!r} in YAML 1.1 but as {core!r} in YAML "
                        "1.2, so hosts would not agree on it",
                        hint="quote it to make it text",
                    )
            return value

        return constructor

    as_written = one_reading(lambda loader, node: loader.construct_scalar(node))
    AsWritten.add_constructor("tag:yaml.org,2002:timestamp", as_written)
    for tag, construct in (
        ("bool", safe.construct_yaml_bool),
        ("int", safe.construct_yaml_int),
        ("float", safe.construct_yaml_float),
        ("str", safe.construct_yaml_str),
        ("null", safe.construct_yaml_null),
    ):
        AsWritten.add_constructor(f"tag:yaml.org,2002:{tag}", one_reading(construct))
    return AsWritten


MAX_JSON_INT = 2**53 - 1  # beyond it a JSON number is not one value to every reader (I-JSON, RFC 7493)


def as_json(text: str) -> dict[str, Any]:
    """A SKILL.md's frontmatter as the JSON object the MCP Skills extension serves (docs/lineage/anchor.md §1).

    The YAML is read as :func:`load` reads it (YAML 1.1 safe schema, unique string keys, bounded), with one
    change: a timestamp is the string written (``2024-01-15`` → ``"2024-01-15"``).  Refused, naming the
    field, is whatever has no single JSON rendering: a key that is not a string (``1:``, ``yes:``), a
    float that is not finite, an integer beyond ±(2^53 − 1), binary data, sets and ordered pairs.
    """
    found = split(text)
    if found is None:
        load(text)  # raises the reason
    assert found is not None
    source = text[found[0] : found[1]]
    yaml, _, _ = _yaml()
    try:
        bounded(source)
        fm = yaml.load(source, Loader=_json_loader()) if source.strip() else {}
    except yaml.YAMLError as exc:
        raise SkillError(f"malformed frontmatter: YAML error: {exc}".replace("\n", " ")) from exc
    if not isinstance(fm, dict):
        raise SkillError("malformed frontmatter: it must be a YAML mapping of fields")
    _check_json(fm, "")
    return fm


def _check_json(value: Any, where: str) -> None:
    stack = [(value, where)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise SkillError(
                        f"frontmatter {where or 'mapping'} has the key {shown(key)}, which YAML reads as a "
                        f"{type(key).__name__}, not text; JSON keys are text, so it has no one rendering",
                        hint="quote the key",
                    )
                stack.append((item, f"{where}.{key}" if where else key))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(value))
        elif isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        elif isinstance(value, int):
            if abs(value) > MAX_JSON_INT:
                raise SkillError(
                    f"frontmatter {where} is {value}, beyond ±(2^53 - 1): JSON readers disagree on it", hint="quote it"
                )
        elif isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise SkillError(f"frontmatter {where} is {value}, which JSON cannot hold", hint="quote it")
        else:
            raise SkillError(
                f"frontmatter {where} is a YAML {type(value).__name__}, which has no JSON rendering",
                hint="write it as text, a number, a list or a mapping",
            )


def whole_number(value: Any) -> int | None:
    """A version counter's value: a non-negative whole number, given as an integer or a decimal string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        return int(value.strip())
    return None


def counter_key(fm: dict[str, Any]) -> tuple[str, int]:
    """Which ``metadata`` key holds the ledger's counter, and its value (0 when absent)."""
    meta = fm.get("metadata")
    if meta is None:
        return "version", 0
    if not isinstance(meta, dict):
        raise SkillError(
            "malformed frontmatter: 'metadata' must be a mapping, so the ledger can keep its version there",
            hint="make metadata a mapping, or remove it",
        )
    for key in ("version", "ledger-version"):
        if key in meta:
            value = whole_number(meta[key])
            if value is not None:
                return key, value
            if key == "ledger-version":
                raise SkillError(
                    f"malformed frontmatter: metadata.ledger-version {shown(meta[key])} is not a whole number"
                )
    return ("ledger-version" if "version" in meta else "version"), 0


def set_counter(text: str, value: int, parsed: tuple[str, bool] | None = None) -> str:
    """``text`` with the ledger's counter set to ``value``, every other byte unchanged.

    Replaces the counter's scalar in place (keeping its quoting), or inserts one key
    where there was none: as the first key of a block ``metadata``, as the first
    entry of a flow one, or as a new ``metadata`` block at the end of the frontmatter.
    ``parsed`` is ``(counter key, whether 'metadata' is there)`` from a parse of this same ``text``
    (``SkillDoc.counter``), which spares parsing it again; the edit is checked by a parse either way.
    """
    if parsed is None:
        fm, _ = load(text)
        parsed = counter_key(fm)[0], "metadata" in fm
    key, has_metadata = parsed
    start, end, _ = split(text)  # type: ignore[misc]
    source = text[start:end]
    nl = "\r\n" if "\r\n" in text else "\n"
    if not has_metadata:  # the common case (most collections carry no counter): append, no parse for marks
        block = f"metadata:{nl}  {key}: '{value}'"
        return _checked(text[:start] + (source + nl + block if source else block + nl) + text[end:], key, value)
    # Marks are offsets into ``source``: libyaml counts them the same way for ASCII text only.
    yaml, base, _ = _yaml()
    loader = base if source.isascii() else yaml.SafeLoader
    root = yaml.compose(source, Loader=loader) if source.strip() else None
    meta_key = meta = None
    for k, v in root.value if isinstance(root, yaml.MappingNode) else ():
        if isinstance(k, yaml.ScalarNode) and k.value == "metadata":
            meta_key, meta = k, v
    quoted = f"'{value}'"
    if meta is None:
        block = f"metadata:{nl}  {key}: {quoted}"
        edited = source + nl + block if source else block + nl
    elif isinstance(meta, yaml.MappingNode):
        node = next((v for k, v in meta.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
        if node is not None:
            style = {"'": f"'{value}'", '"': f'"{value}"', None: str(value), "": str(value)}.get(node.style, quoted)
            edited = source[: node.start_mark.index] + style + source[node.end_mark.index :]
        elif meta.flow_style:
            at = meta.start_mark.index + 1
            edited = source[:at] + f"{key}: {quoted}" + (", " if meta.value else "") + source[at:]
        else:
            first = meta.value[0][0].start_mark.index
            line = source.rfind("\n", 0, first) + 1
            edited = source[:line] + source[line:first] + f"{key}: {quoted}{nl}" + source[line:]
    else:  # metadata: (null) — give it one key
        if meta.end_mark.index > meta.start_mark.index:  # an explicit ~ or null
            edited = source[: meta.start_mark.index] + f"{{{key}: {quoted}}}" + source[meta.end_mark.index :]
        else:
            at = meta_key.end_mark.index + 1  # after "metadata:"
            edited = source[:at] + f"{nl}  {key}: {quoted}" + source[at:]
    return _checked(text[:start] + edited + text[end:], key, value)


def _checked(out: str, key: str, value: int) -> str:
    """``out``, once a parse confirms the edit set exactly the counter (a frontmatter shape not foreseen)."""
    if counter_key(load(out)[0]) != (key, value):
        raise SkillError(
            "cannot set the ledger's version in this frontmatter without rewriting it",
            hint="add 'metadata:' with 'version: \"1\"' by hand, then retry",
        )
    return out


# The spellings of the counter that an installed SKILL.md may carry (docs/lineage/supply.md §1, "the counter set
# aside"): one line of the block mapping under a line that is exactly ``metadata:``, at that block's
# indentation, the value a whole number written plain (no leading zero: YAML 1.1 reads 010 as octal), or in
# single or double quotes.  Anything else (a flow mapping, a comment on the line, a tag) is refused.
COUNTER_LINE = re.compile(r"( +)(version|ledger-version): ((?:0|[1-9][0-9]*)|'[0-9]+'|\"[0-9]+\")\Z")
_CLOSE = re.compile(r"---[ \t]*\Z")


def _lines(text: str) -> tuple[list[str], int]:
    """``text`` as lines split after each LF, terminators kept, and the index of the line closing the
    frontmatter (lineage/supply.md §1: only LF ends a line; CR, VT, FF, U+2028 and the rest do not)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    for i in range(1, len(lines)):
        if _CLOSE.match(_bare(lines[i])):
            return lines, i
    raise SkillError("malformed frontmatter: the '---' on line 1 is never closed by a '---' line")


def _bare(line: str) -> str:
    """A line without its terminator (LF or CR LF)."""
    line = line[:-1] if line.endswith("\n") else line
    return line[:-1] if line.endswith("\r") else line


def counter_line(text: str) -> tuple[int, str] | None:
    """Which line of ``text`` writes the ledger's counter (0-based, lines split after each LF) and that line
    without its terminator; None when the frontmatter holds no counter.

    Refuses a counter (lineage.md §4.2) written in a spelling not allowed, or on which this reading and a
    YAML parse of the same text disagree."""
    fm, _ = load(text)
    key, value = counter_key(fm)
    meta = fm.get("metadata")
    present = isinstance(meta, dict) and key in meta
    lines, close = _lines(text)
    candidates: dict[str, tuple[int, str]] = {}
    inside, block = False, None  # under a 'metadata:' line; the indentation of its block
    for i in range(1, close):
        line = _bare(lines[i])
        if not line.startswith(" "):
            inside, block = line == "metadata:", None
            continue
        if not inside:
            continue
        indent = len(line) - len(line.lstrip(" "))
        block = indent if block is None else block
        m = COUNTER_LINE.match(line)
        if m and indent == block and m.group(2) not in candidates:
            candidates[m.group(2)] = (i, line)
    found = candidates.get(key) if present else None
    if found is None:
        if present or candidates:
            raise SkillError(
                f"SKILL.md writes its counter metadata.{key} in a spelling the ledger cannot set aside",
                hint="write it on its own line of a block 'metadata:' mapping, as "
                f"{key}: '{value}' (see docs/lineage.md, 'The supply record')",
            )
        return None
    written = COUNTER_LINE.match(found[1])
    if written is None or int(written.group(3).strip("'\"")) != value:
        raise SkillError(
            "SKILL.md's counter line and its YAML disagree (see docs/lineage.md, 'The supply record')",
            hint="write the counter once, on its own line of a block 'metadata:' mapping",
        )
    return found


def set_aside(text: str, served: str | None) -> str:
    """``text`` (an installed SKILL.md) with the ledger's counter set aside: its counter line replaced by
    ``served`` (the counter line of the SKILL.md as its source served it, terminator excluded) or, when
    ``served`` is None, removed, with the ``metadata:`` line above it when that leaves its block empty
    (docs/lineage/supply.md §1).  The result is the served SKILL.md, byte for byte, when only the counter changed."""
    found = counter_line(text)
    if found is None:
        raise SkillError(
            "SKILL.md carries no version counter to set aside",
            hint="an installed skill's SKILL.md carries the ledger's counter"
            " (see docs/lineage.md, 'Where versions live')",
        )
    at, line = found
    lines, _ = _lines(text)
    if served is not None:
        theirs, mine = COUNTER_LINE.match(served), COUNTER_LINE.match(line)
        if theirs is None or mine is None or theirs.group(1, 2) != mine.group(1, 2):
            raise SkillError(
                f"the served counter line {served!r} is not one the installed counter replaces",
                hint="the same key at the same indentation, a whole number (see docs/lineage.md, 'The supply record')",
            )
        lines[at] = served + lines[at][len(line) :]
        return "".join(lines)
    del lines[at]
    if _bare(lines[at - 1]) == "metadata:" and not lines[at].startswith(" "):
        del lines[at - 1]
    return "".join(lines)
