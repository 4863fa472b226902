"""A commit object's ``gpgsig`` header: where git keeps a commit's own signature, and what it covers.

Git signs a commit object *without* the header (the payload), then inserts ``gpgsig`` at the end
of the header, after ``committer``: the signature's first line follows ``gpgsig `` and each further
line is prefixed with one space (git's commit.c, ``do_sign_commit``; Documentation/
gitformat-signature.txt).  ``git verify-commit`` drops that header and its continuation lines
again to rebuild the payload.  Both halves are here, byte for byte, so a snapshot the ledger signs
is one plain git verifies, and the audit checks exactly what git checks.

Stricter than git on reading: one ``gpgsig`` at most, none of git's other signature headers
(``gpgsig-sha256``, a ``mergetag``), and the header must be the last of the commit's header, as
written here; anything else is refused as malformed, not guessed at.
"""

from __future__ import annotations

from ledger.errors import StoreError

__all__ = ["HEADER", "insert", "split"]

HEADER = b"gpgsig"
_OTHER = (b"gpgsig-sha256 ", b"mergetag ")


def insert(payload: bytes, signature: str) -> bytes:
    """The signed commit object: ``payload`` (a commit with no signature header) with ``signature``
    (armored, newline-terminated) as its ``gpgsig`` header, the header's last line."""
    head, sep, _ = payload.partition(b"\n\n")
    if not sep or any(line.startswith((HEADER + b" ", *_OTHER)) for line in head.split(b"\n")):
        raise StoreError("internal: a commit to be signed must have a header and no signature yet")
    lines = signature.encode().split(b"\n")
    if len(lines) < 2 or lines[-1] != b"" or any(not line for line in lines[:-1]):
        raise StoreError("internal: a commit signature must be non-empty lines, each ending in a newline")
    block = HEADER + b" " + b"".join(b" " * bool(i) + line + b"\n" for i, line in enumerate(lines[:-1]))
    at = len(head) + 1  # after the header's last newline: the end of the header
    return payload[:at] + block + payload[at:]


def split(raw: bytes) -> tuple[bytes, str | None]:
    """``(payload, signature)`` of a commit object: the bytes git verifies, and the armored text of its
    ``gpgsig`` header (``None`` when unsigned).  Refuses what :func:`insert` would not have written."""
    head, sep, body = raw.partition(b"\n\n")
    if not sep:
        raise StoreError("the commit object has no blank line between its header and message")
    lines = head.split(b"\n")
    first = next((i for i, line in enumerate(lines) if line.startswith(HEADER + b" ")), None)
    if any(line.startswith(_OTHER) for line in lines):
        raise StoreError("the commit carries a signature header other than gpgsig (gpgsig-sha256, mergetag)")
    if any(line.startswith(b" ") for line in lines[: len(lines) if first is None else first]):
        raise StoreError("the commit's header has a continuation line outside a gpgsig header")
    if first is None:
        return raw, None
    block = lines[first:]
    if first == 0 or any(not line.startswith(b" ") for line in block[1:]):
        raise StoreError("the commit's gpgsig header is not the last of its header, or is given twice")
    text = b"\n".join([block[0][len(HEADER) + 1 :], *(line[1:] for line in block[1:])]) + b"\n"
    payload = b"\n".join(lines[:first]) + sep + body
    try:
        return payload, text.decode("ascii")
    except UnicodeDecodeError:
        raise StoreError("the commit's gpgsig header is not ASCII") from None
