"""The C2SP text formats of an epoch: signed notes (Ed25519), checkpoints and tlog-proofs.

An epoch's checkpoint is a ``c2sp.org/signed-note`` whose text is a ``c2sp.org/tlog-checkpoint``
(origin, size, base64 root), signed by the Ed25519 sibling (:mod:`ledger.signatures.siblings`)
of the operator's chain key; a brain's proof of inclusion is a ``c2sp.org/tlog-proof@v1``
carrying that checkpoint.  Go's ``golang.org/x/mod/sumdb/note`` reads and writes the same
bytes (its published vector is pinned in ``tests/vectors/tlog/``).  A verifier learns the
checkpoint key from the receipt and trusts it only through :func:`key_statement`: an
EIP-191 signature by the operator's Ethereum address, the sender the chain shows anchored
the epoch.  Parsers refuse every byte the specifications do not allow.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from ledger.errors import ChainError
from ledger.protocol.signing import SignatureError, keccak, recover, sign

__all__ = [
    "CHECKPOINT_KEY_STATEMENT",
    "TLOG_PROOF_HEADER",
    "NoteError",
    "certify_key",
    "checkpoint_text",
    "format_proof",
    "key_id",
    "open_note",
    "origin_of",
    "parse_checkpoint",
    "parse_proof",
    "parse_vkey",
    "recover_key_signer",
    "sign_note",
    "vkey",
]

TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"
CHECKPOINT_KEY_STATEMENT = "brain-ledger epoch checkpoint key v1\n"
_ED25519 = 0x01
_NAME = re.compile(r"[^\s+]+")  # non-empty, no Unicode space, no '+'
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,19}")
_MAX_NOTE = 64 * 1024


class NoteError(ChainError):
    """A signed note, checkpoint or tlog-proof that is malformed or does not verify."""


def _b64(text: str, what: str) -> bytes:
    """Strict standard base64 (RFC 4648 §4): padding required, no whitespace, canonical."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise NoteError(f"{what} is not standard base64") from exc
    if base64.b64encode(raw).decode() != text:
        raise NoteError(f"{what} is not canonical base64")
    return raw


def _decimal(text: str, what: str) -> int:
    if not _DECIMAL.fullmatch(text) or int(text) >= 1 << 64:
        raise NoteError(f"{what} {text[:40]!r} is not a decimal without leading zeros below 2^64")
    return int(text)


def key_id(name: str, public: bytes) -> bytes:
    """``SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)[:4]`` (signed-note, Ed25519)."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([_ED25519]) + public).digest()[:4]


def vkey(name: str, public: bytes) -> str:
    """The verifier key as Go's note package writes it: ``name+<key id hex>+base64(0x01 ‖ public)``."""
    if not _NAME.fullmatch(name) or len(public) != 32:
        raise NoteError(f"a key name has no spaces or '+', and an Ed25519 key is 32 bytes: {name[:80]!r}")
    return f"{name}+{key_id(name, public).hex()}+{base64.b64encode(bytes([_ED25519]) + public).decode()}"


def parse_vkey(text: str) -> tuple[str, bytes]:
    """(name, Ed25519 public key) of a verifier key; its key id must be the one the key implies.

    Split at the first two ``+`` only, as Go's ``sumdb/note`` does: the name has none, and standard
    base64 may hold ``+`` (about half of all keys)."""
    parts = text.split("+", 2)
    if len(parts) != 3 or not _NAME.fullmatch(parts[0]) or not re.fullmatch(r"[0-9a-f]{8}", parts[1]):
        raise NoteError(f"a verifier key is name+<8 hex>+<base64>, got {text[:80]!r}")
    raw = _b64(parts[2], "the verifier key")
    if len(raw) != 33 or raw[0] != _ED25519:
        raise NoteError("the verifier key is not an Ed25519 (type 0x01) key of 32 bytes")
    if key_id(parts[0], raw[1:]).hex() != parts[1]:
        raise NoteError("the verifier key's id does not match its name and key")
    return parts[0], raw[1:]


def sign_note(text: str, name: str, private: object) -> str:
    """``text`` (ending in a newline) signed by an Ed25519 key (cryptography's), as a signed note."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    _check_text(text)
    public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)  # type: ignore[attr-defined]
    sig = key_id(name, public) + private.sign(text.encode())  # type: ignore[attr-defined]
    return f"{text}\n\u2014 {name} {base64.b64encode(sig).decode()}\n"


def _check_text(text: str) -> None:
    if not text.endswith("\n") or any(ord(c) < 0x20 and c != "\n" for c in text):
        raise NoteError("a note's text ends in a newline and holds no control character but newlines")


def open_note(note: str, name: str, public: bytes) -> str:
    """The text of a signed note whose signature by ``name``'s Ed25519 key ``public`` verifies.

    Signatures by other keys are ignored, as the specification requires; a failing signature of
    this key, or none, refuses the note."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if len(note) > _MAX_NOTE or not note.endswith("\n"):
        raise NoteError("a signed note ends in a newline and is at most 64 KiB")
    cut = note.rfind("\n\n")
    if cut < 0:
        raise NoteError("a signed note has a blank line before its signatures")
    text, lines = note[: cut + 1], note[cut + 2 : -1].split("\n")
    _check_text(text)
    if len(lines) > 16 or not lines[0]:
        raise NoteError("a signed note has 1 to 16 signature lines")
    want, found = key_id(name, public), False
    for line in lines:
        m = re.fullmatch("\u2014 ([^ ]+) ([A-Za-z0-9+/=]+)", line)
        if m is None or not _NAME.fullmatch(m[1]):
            raise NoteError(f"malformed signature line {line[:80]!r}")
        sig = _b64(m[2], "a signature")
        if m[1] != name or sig[:4] != want:
            continue
        if len(sig) != 68:
            raise NoteError(f"{name}'s Ed25519 signature is 64 bytes after its key id")
        try:
            Ed25519PublicKey.from_public_bytes(public).verify(sig[4:], text.encode())
        except InvalidSignature as exc:
            raise NoteError(f"the note's signature by {name} does not verify") from exc
        found = True
    if not found:
        raise NoteError(f"the note carries no signature by {name} ({want.hex()})")
    return text


def origin_of(chain_id: int, registry: str, operator: str) -> str:
    """The operator log's origin and key name: where its epochs are anchored, and by whom."""
    return f"brain-ledger/epochs/{chain_id}/{registry.lower()}/{operator.lower()}"


def checkpoint_text(origin: str, size: int, root: bytes) -> str:
    if not _NAME.fullmatch(origin) or len(root) != 32:
        raise NoteError("a checkpoint's origin has no spaces or '+', and its root is 32 bytes")
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"


def parse_checkpoint(text: str) -> tuple[str, int, bytes]:
    """(origin, size, root) of a checkpoint's note text; extension lines are refused (we write none)."""
    lines = text.split("\n")
    if len(lines) != 4 or lines[3] != "" or not lines[0]:
        raise NoteError("a checkpoint is exactly three lines: origin, size, root")
    root = _b64(lines[2], "the checkpoint root")
    if len(root) != 32:
        raise NoteError("the checkpoint root is not 32 bytes")
    return lines[0], _decimal(lines[1], "the checkpoint size"), root


def format_proof(index: int, path: list[bytes], checkpoint: str, extra: bytes | None = None) -> str:
    """A ``c2sp.org/tlog-proof@v1``: header, optional extra, index, the path, a blank line, the checkpoint."""
    head = [TLOG_PROOF_HEADER]
    if extra is not None:
        head.append("extra " + base64.b64encode(extra).decode())
    head.append(f"index {index}")
    head += [base64.b64encode(h).decode() for h in path]
    return "\n".join(head) + "\n\n" + checkpoint


def parse_proof(text: str) -> tuple[bytes | None, int, list[bytes], str]:
    """(extra, index, path, signed checkpoint) of a tlog-proof; the checkpoint is checked by the caller."""
    if len(text) > _MAX_NOTE:
        raise NoteError("a tlog-proof is at most 64 KiB")
    head, sep, checkpoint = text.partition("\n\n")
    lines = head.split("\n")
    if not sep or lines[0] != TLOG_PROOF_HEADER:
        raise NoteError(f"a tlog-proof starts with {TLOG_PROOF_HEADER!r} and has a blank line before its checkpoint")
    extra, i = None, 1
    if len(lines) > i and lines[i].startswith("extra "):
        extra, i = _b64(lines[i][6:], "the extra data"), i + 1
    if len(lines) <= i or not lines[i].startswith("index "):
        raise NoteError("a tlog-proof names its index after the header")
    index = _decimal(lines[i][6:], "the index")
    path = [_b64(line, "a proof hash") for line in lines[i + 1 :]]
    if any(len(h) != 32 for h in path) or len(path) > 64:
        raise NoteError("a proof line is one base64 SHA-256 hash, at most 64 of them")
    return extra, index, path, checkpoint


def _eip191(message: str) -> bytes:
    data = message.encode()
    return keccak(b"\x19Ethereum Signed Message:\n" + str(len(data)).encode() + data)


def certify_key(secret: bytes, verifier_key: str) -> str:
    """The operator's EIP-191 signature over :data:`CHECKPOINT_KEY_STATEMENT` ‖ the verifier key ‖ newline."""
    return sign(secret, _eip191(CHECKPOINT_KEY_STATEMENT + verifier_key + "\n"))


def recover_key_signer(verifier_key: str, signature: str) -> str:
    """The address (``0x``, lower case) that certified ``verifier_key`` as its checkpoint key."""
    try:
        return recover(_eip191(CHECKPOINT_KEY_STATEMENT + verifier_key + "\n"), signature)
    except SignatureError as exc:
        raise NoteError(f"the checkpoint key's certification is not a valid signature: {exc.message}") from exc
