"""Symlinks judged by where they point (LS705).

A link's target is read (``os.readlink``, a git blob of mode 120000, a tar member's
``linkname``), never followed.  A target that leaves the skill (absolute, ``~``, a drive, or a
``..`` that climbs out of the skill's root) is ``high``; ``critical`` when it names secrets or
system files (/etc, /proc, /root, /var, ~/.ssh, ~/.aws, a credential path).  A link whose
target the source did not say (``None``) is left to LS701.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping

from ledger.scanner.meaning import places
from ledger.scanner.meaning.units import finding
from ledger.scanner.rules import Finding

__all__ = ["analyse", "escapes"]


def escapes(path: str, target: str) -> str | None:
    """Where ``target`` (of the link at ``path``, relative to the skill) points when that is outside
    the skill, else None."""
    t = target.replace("\\", "/")
    if t.startswith(("/", "~", "$", "%")) or (len(t) > 1 and t[1] == ":"):
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
        chained = _through_links(path, target, symlinks)
        if out is None and chained is None:
            continue
        out = out or chained or ""
        names = (
            places.system_file(target)
            or places.system_file(out)
            or _climbs_to_secret(out)
            or _names_homes(out)
            or (
                chained is not None
                and (_climbs_to_secret(chained) or places.system_file(chained) or _names_homes(chained))
            )
        )
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


# Home folders and macOS's real system folders (/etc is a link to /private/etc there); Windows'
# profile variables.
_HOMES = re.compile(
    r"^(?:/home|/Users|[A-Za-z]:/Users|/export/home)(?:/[^/]+)?/?$|^/private(?:/(?:etc|var|tmp))?(?:/|$)"
    r"|^%(?:USERPROFILE|APPDATA|LOCALAPPDATA|HOMEPATH|HOMEDRIVE|SYSTEMROOT|WINDIR)%|^\$env:(?:USERPROFILE|APPDATA)",
    re.I,
)


def _names_homes(out: str) -> bool:
    """A home folder (or all of them), macOS's /private system folders, or a climb of three or more
    levels out of the skill (a skill sits in ``~/.claude/skills/NAME``: three levels up is the home
    folder, with every secret in it)."""
    climbs = 0
    rest = out
    while rest.startswith("../") or rest == "..":
        climbs += 1
        rest = rest[3:]
    return bool(_HOMES.search(out)) or climbs >= 3


def _through_links(path: str, target: str, symlinks: Mapping[str, str | None], hops: int = 8) -> str | None:
    """Where a relative target ends after the skill's other links it passes through (``notes ->
    store/up/.ssh/id_rsa`` with ``store/up -> ../../..``), when that is outside the skill; else None."""
    cur = posixpath.normpath(posixpath.join(posixpath.dirname(path), target.replace("\\", "/")))
    for _ in range(hops):
        if cur.startswith(("/", "..")):
            return cur
        parts = cur.split("/")
        for i in range(len(parts), 0, -1):
            head = "/".join(parts[:i])
            nxt = symlinks.get(head)
            if nxt is not None and head != path:
                out = escapes(head, nxt)
                base = out if out is not None else posixpath.normpath(posixpath.join(posixpath.dirname(head), nxt))
                cur = posixpath.normpath("/".join([base, *parts[i:]]))
                break
        else:
            return None
    return None
