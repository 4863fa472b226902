"""Symlinks judged by where they point (LS705).

A link's target is read (``os.readlink``, a git blob of mode 120000, a tar member's
``linkname``), never followed.  A target that leaves the skill (absolute, ``~``, a drive, or a
``..`` that climbs out of the skill's root) is ``high``; ``critical`` when it names secrets or
system files (/etc, /proc, /root, /var, ~/.ssh, ~/.aws, a credential path).  A link whose
target the source did not say (``None``) is left to LS701.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping

from ledger.supply.meaning import places
from ledger.supply.meaning.units import finding
from ledger.supply.scanrules import Finding

__all__ = ["analyse", "escapes"]


def escapes(path: str, target: str) -> str | None:
    """Where ``target`` (of the link at ``path``, relative to the skill) points when that is outside
    the skill, else None."""
    t = target.replace("\\", "/")
    if t.startswith(("/", "~", "$")) or (len(t) > 1 and t[1] == ":"):
        return t
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), t))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return joined
    return None


def analyse(symlinks: Mapping[str, str | None]) -> Iterator[Finding]:
    for path, target in sorted(symlinks.items()):
        if target is None:
            continue
        out = escapes(path, target)
        if out is None:
            continue
        names = places.system_file(target) or places.system_file(out) or _climbs_to_secret(out)
        severity = "critical" if names else "high"
        what = "a secret or system file" if names else "outside the skill"
        yield finding("LS705", severity, path, None, f"-> {target}: {what}")


def _climbs_to_secret(rel: str) -> bool:
    """``../../.ssh/id_rsa``: the part after the climb names a secret wherever the skill sits."""
    rest = rel
    while rest.startswith("../"):
        rest = rest[3:]
    return rest not in ("", "..") and (
        places.credential(rest) is not None
        or places.credential("~/" + rest) is not None
        or rest.split("/")[0] in (".ssh", ".aws", ".gnupg", ".kube", ".docker", "etc")
    )
