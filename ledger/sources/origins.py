"""Where a source may be, and what of its location may be written down (docs/sources.md §1.1).

Two rules, one module:

- **Credentials never travel.**  A location is recorded in the signed supply record, pushed
  with the brain and published in its manifests, and it appears in messages.  So a location
  whose userinfo, query or fragment carries a credential (:func:`credentials`: ``user:pass@``,
  ``token@``, ``access_token=``, presigned S3, GCS and Azure SAS parameters, a token-shaped
  value anywhere) is refused, or, when the user asks (``--strip-credentials``), written and
  fetched without those parts (:func:`scrubbed`).  Messages show a location through
  :func:`redacted`, which drops them.
- **A third party's document stays on its own origin.**  The SOURCE a user types may be a
  local path; a location that a *document* names (a marketplace's plugin, a lock's line,
  an index's entry, another brain's supply record) is never on the installer's machine:
  it is a path inside the document's own repository (resolved by its reader), or a remote
  ``https``, ``ssh`` or ``git`` URL (:func:`remote`).  ``file://``, bare paths, ``ext::``,
  ``fd::`` and loopback hosts are refused with the reason.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

from ledger.errors import SourceError

__all__ = ["credentials", "redacted", "refuse_credentials", "remote", "scp_like", "scrubbed"]

# Query and fragment parameters whose value is a secret (names compared case-insensitively).
_SECRET_NAMES = frozenset(
    {
        "access_token",
        "token",
        "id_token",
        "refresh_token",
        "private_token",
        "auth_token",
        "oauth_token",
        "job_token",
        "auth",
        "authorization",
        "bearer",
        "jwt",
        "session",
        "sessionid",
        "session_token",
        "api_key",
        "apikey",
        "api-key",
        "key",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "pwd",
        "sig",
        "signature",
        "credential",
        "credentials",
        "code",
        "pass",
        "passphrase",
        "hmac",
        "awsaccesskeyid",
        "expires",
        "googleaccessid",
        "policy",
        "key-pair-id",  # S3 (v2), GCS (v2), CloudFront
    }
)
_SECRET_PREFIXES = ("x-amz-", "x-goog-")  # S3 and GCS v4 presigned URLs: every parameter goes with the signature
# Names that contain one of these are secrets too ('pass', 'auth' and 'key' only as whole names: as parts they
# would take 'bypass', 'author', 'monkey'; 'key' alone is Google's API key, a false positive is one flag away).
_SECRET_PARTS = ("token", "secret", "signature", "credential", "password", "apikey", "api_key", "api-key", "hmac")
# Azure SAS: with 'sig', every parameter of the SAS is part of the credential.
_SAS = frozenset(
    {
        "sv",
        "ss",
        "srt",
        "sp",
        "se",
        "st",
        "spr",
        "sr",
        "si",
        "sip",
        "sdd",
        "skoid",
        "sktid",
        "skt",
        "ske",
        "sks",
        "skv",
        "saoid",
        "suoid",
        "scid",
        "ses",
        "rscc",
        "rscd",
        "rsce",
        "rscl",
        "rsct",
    }
)
# Token shapes that are secrets wherever they appear (GitHub, GitLab, Slack, AWS, JWT, npm, Hugging Face, OpenAI).
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{20,}|xox[abposr]-[\w-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,}|sk-[A-Za-z0-9_-]{20,})"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_REMOTE_SCHEMES = frozenset({"https", "ssh", "git", "git+ssh", "ssh+git"})
_HINT = (
    "give the URL without them and let git's credential helper (or ~/.netrc, for an index) supply them, or "
    "pass --strip-credentials to remove them before anything is written"
)


def _secret_name(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_NAMES or low.startswith(_SECRET_PREFIXES) or any(p in low for p in _SECRET_PARTS)


def _pieces(text: str) -> list[tuple[str, str, str, str]]:
    """The parameters of a query (or a ``k=v`` fragment), split on ``&`` and ``;`` alike (servers take either
    as a separator): (separator before it, raw text, decoded name, decoded value), empty pieces dropped."""
    out: list[tuple[str, str, str, str]] = []
    parts = re.split(r"([&;])", text)
    for i in range(0, len(parts), 2):
        raw = parts[i]
        if raw:
            name, _, value = raw.partition("=")
            out.append((parts[i - 1] if i else "", raw, unquote_plus(name), unquote_plus(value)))
    return out


def _params(text: str) -> list[tuple[str, str]]:
    return [(name, value) for _sep, _raw, name, value in _pieces(text)]


def _join(pieces: list[tuple[str, str, str, str]], show: list[str]) -> str:
    """Pieces back into a query, each as ``show`` gives it, with the separators they had."""
    seps = ["" if not i else piece[0] or "&" for i, piece in enumerate(pieces)]
    return "".join(sep + text for sep, text in zip(seps, show, strict=True))


def _secret_params(text: str) -> set[str]:
    """The parameter names of a query (or a ``k=v`` fragment) that carry a credential."""
    pairs = _params(text)
    names = {k for k, v in pairs if _secret_name(k) or _TOKEN.search(v)}
    if any(k.lower() == "sig" for k, _ in pairs):
        names |= {k for k, _ in pairs if k.lower() in _SAS}
    return names


def _secret_fragment(fragment: str) -> bool:
    return bool(fragment) and bool(("=" in fragment and _secret_params(fragment)) or _TOKEN.search(fragment))


def _split(url: str) -> tuple[str, str, str, str, str] | None:
    """(scheme, netloc, path, query, fragment) of a ``scheme://`` URL, else None."""
    scheme, sep, _ = url.partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):
        return None
    parts = urlsplit(url)
    return parts.scheme, parts.netloc, parts.path, parts.query, parts.fragment


def credentials(url: str) -> list[str]:
    """What in ``url`` carries a credential, named without its value (empty: nothing does).

    The user of an ``ssh://`` URL, and of git's ``user@host:path`` form, is a login, not a secret."""
    found: list[str] = []
    parts = _split(url)
    if parts is None:  # a path the user typed, or git's host:path (whose path may still hold a token)
        return ["a token in the location"] if scp_like(url) and _TOKEN.search(url) else []
    scheme, netloc, path, query, fragment = parts
    userinfo, at, _host = netloc.rpartition("@")
    if at and (":" in userinfo or scheme.lower() not in ("ssh", "git+ssh", "ssh+git")):
        found.append("userinfo (user:token@)")
    found += [f"query parameter {n}" for n in sorted(_secret_params(query))]
    if _secret_fragment(fragment):
        found.append("the fragment")
    if _TOKEN.search(path) or (at and _TOKEN.search(userinfo) and "userinfo (user:token@)" not in found):
        found.append("a token in the path" if _TOKEN.search(path) else "userinfo (user:token@)")
    return found


def scrubbed(url: str) -> str:
    """``url`` without the parts :func:`credentials` names: userinfo (an ``ssh`` login is kept), the
    query parameters that carry a credential, a fragment that does.  A token in the path cannot be
    removed and stays for :func:`credentials` to refuse."""
    parts = _split(url)
    if parts is None:
        return url
    scheme, netloc, path, query, fragment = parts
    userinfo, at, host = netloc.rpartition("@")
    if at and (":" in userinfo or scheme.lower() not in ("ssh", "git+ssh", "ssh+git")):
        netloc = host
    secret = _secret_params(query)
    kept = [p for p in _pieces(query) if p[2] not in secret]
    query = _join(kept, [raw for _sep, raw, _k, _v in kept])
    if _secret_fragment(fragment):
        fragment = ""
    return urlunsplit((scheme, netloc, path, query, fragment))


def redacted(url: str) -> str:
    """``url`` as a message may show it: each credential's value replaced by ``…``."""
    parts = _split(url)
    if parts is None:
        return _TOKEN.sub("…", url)
    scheme, netloc, path, query, fragment = parts
    userinfo, at, host = netloc.rpartition("@")
    if at and (":" in userinfo or scheme.lower() not in ("ssh", "git+ssh", "ssh+git")):
        netloc = f"…@{host}"
    secret = _secret_params(query)
    pieces = _pieces(query)
    query = _join(pieces, [f"{raw.partition('=')[0]}=…" if k in secret else raw for _sep, raw, k, _v in pieces])
    if _secret_fragment(fragment):
        fragment = "…"
    return _TOKEN.sub("…", urlunsplit((scheme, netloc, path, query, fragment)))


def refuse_credentials(url: str, where: str, *, strip: bool = False) -> str:
    """``url`` when it carries no credential; else, with ``strip``, :func:`scrubbed` (when that removes
    every one); else :class:`SourceError` naming what carries one, never its value."""
    found = credentials(url)
    if not found:
        return url
    if strip:
        clean = scrubbed(url)
        if not credentials(clean):
            return clean
        found = credentials(clean)
    raise SourceError(
        f"{where} carries credentials ({', '.join(found)}: {redacted(url)}), which would be recorded "
        "in the brain's signed history and published with it",
        hint=_HINT,
    )


def scp_like(location: str) -> bool:
    """Whether git reads ``location`` as ``[user@]host:path`` (no scheme, a colon before any slash, a host
    longer than one letter so that ``C:`` stays a drive)."""
    if "://" in location or "::" in location.split("/")[0]:
        return False
    colon, slash = location.find(":"), location.find("/")
    return colon > 1 and (slash < 0 or colon < slash) and not location.startswith("-")


def _local_host(host: str) -> bool:
    """Whether ``host`` is this machine in any spelling the resolver takes: ``localhost`` and ``*.localhost``
    (a trailing dot and percent-escapes, which git decodes, ignored), or an address, IPv4 in any form
    ``inet_aton`` reads (``127.1``, ``0``, ``2130706433``, ``0x7f000001``, ``0177.0.0.1``) and IPv6 with an
    embedded IPv4 one (``::ffff:127.0.0.1``), that is loopback, unspecified or link-local.  A name that
    only a DNS or hosts-file lookup would show to be local is not looked up (docs/sources.md §1.1)."""
    host = unquote(host).strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    host = host.partition("%")[0].rstrip(".")  # an IPv6 zone; the DNS root
    if host in ("localhost", "") or host.endswith(".localhost"):
        return True
    try:
        addr: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(host)
    except ValueError:
        try:  # the C library's legacy forms: fewer parts, decimal, octal, hex
            addr = ipaddress.IPv4Address(socket.inet_aton(host))
        except (OSError, ValueError):
            return False
    if isinstance(addr, ipaddress.IPv6Address):
        embedded = addr.ipv4_mapped or addr.sixtofour
        if embedded is None and addr.packed[:12] == bytes(12) and int(addr) > 1:  # IPv4-compatible ::a.b.c.d
            embedded = ipaddress.IPv4Address(addr.packed[12:])
        if embedded is not None and _local_addr(embedded):
            return True
    return _local_addr(addr)


def _local_addr(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return addr.is_loopback or addr.is_unspecified or addr.is_link_local


def _scp_host(location: str) -> str:
    """The host of git's ``[user@]host:path`` or ``[user@][host]:path`` form."""
    bracketed = re.match(r"(?:[^@/:\[]*@)?\[([^\]]*)\]:", location)
    if bracketed:
        return "[" + bracketed.group(1).rpartition("@")[2] + "]"
    return location.split(":")[0].rpartition("@")[2]


def remote(location: str, where: str) -> str:
    """``location`` when a third party may name it: a remote ``https``, ``ssh`` or ``git`` URL or git's
    ``host:path``, on a host that is not this machine, with no credential in it; else :class:`SourceError`."""
    hint = (
        "a marketplace, a lock or an index may name a path inside its own repository or a remote https, ssh "
        "or git URL; to install from this machine, name the path yourself: 'ledger install PATH'"
    )
    refuse_credentials(location, where)
    if not isinstance(location, str) or not location or location != location.strip() or "\0" in location:
        raise SourceError(f"{where} names no location", hint=hint)
    if "::" in location.split("/")[0] and "://" not in location:
        raise SourceError(
            f"{where} names a source on this machine: {redacted(location)!r} is a git "
            f"'{location.split('::')[0]}::' transport, which runs a command or reads a local file",
            hint=hint,
        )
    parts = _split(location)
    if parts is None:
        if scp_like(location) and not _local_host(_scp_host(location)):
            return location
        raise SourceError(f"{where} names a source on this machine: {redacted(location)!r} is a local path", hint=hint)
    scheme = parts[0]
    host = urlsplit(location).hostname or ""
    if scheme.lower() == "file":
        raise SourceError(f"{where} names a source on this machine: {location!r} is a file:// URL", hint=hint)
    if scheme.lower() not in _REMOTE_SCHEMES:
        raise SourceError(
            f"{where} names {redacted(location)!r}, a {scheme}:// URL; a third party may name only "
            "https, ssh and git URLs",
            hint=hint,
        )
    if _local_host(host) or host.startswith("-"):
        raise SourceError(f"{where} names a source on this machine: {redacted(location)!r} (host {host!r})", hint=hint)
    return location
