"""Where secrets and persistence live, as the code analysers (python, script, config, links) read
paths.  Private to those analysers until :mod:`ledger.supply.meaning.places` (the shared
knowledge) folds these in; keep the two in step.

A path is normalised first (:func:`norm`): backslashes become slashes, ``$HOME``, ``${HOME}``,
``%USERPROFILE%``, ``/home/NAME``, ``/Users/NAME`` and ``/root`` become ``~``.
"""

from __future__ import annotations

import re

__all__ = ["credential", "norm", "persistence", "system_file"]

_HOME = re.compile(
    r"^(?:\$HOME|\$\{HOME\}|%USERPROFILE%|%HOMEPATH%|\$env:USERPROFILE|/home/[^/]+|/Users/[^/]+|/root|C:/Users/[^/]+)(?=/|$)",
    re.I,
)

# (pattern over a normalised path, label).  SSH: private keys and the whole folder, never
# config/known_hosts/a .pub key.  ``.env`` files are labelled "env file": alone a medium.
_CREDENTIALS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), label)
    for p, label in (
        (r"(?:^|/)\.ssh/(?:id_[\w-]+(?<!\.pub)|identity|\*[^/]*|)$|(?:^|/)\.ssh/?$", "SSH private key"),
        (r"(?:^|/)id_(?:rsa|dsa|ecdsa|ed25519)$", "SSH private key"),
        (r"(?:^|/)\.aws(?:/credentials|/\*|/?$)", "AWS credentials"),
        (r"(?:^|/)\.config/gcloud(?:/|$)", "gcloud credentials"),
        (r"(?:^|/)\.azure(?:/|$)", "Azure credentials"),
        (r"(?:^|/)\.kube/config$", "kubeconfig"),
        (r"(?:^|/)\.docker/config\.json$", "docker credentials"),
        (r"(?:^|/)\.(?:git-credentials|netrc|pgpass|npmrc|pypirc)$", "token file"),
        (r"(?:^|/)\.gnupg(?:/|$)", "GnuPG keys"),
        (r"(?:^|/)\.password-store(?:/|$)", "password store"),
        (r"(?:^|/)wallet\.dat$|(?:^|/)\.(?:bitcoin|ethereum|electrum|monero)(?:/|$)|/keystore(?:/|$)", "crypto wallet"),
        (
            r"(?:^|/)(?:Exodus|atomic|Electrum)/|(?:^|/)solana/id\.json$|nkbihfbeogaeaoehlefnkodbefgpgknn",
            "crypto wallet",
        ),
        (
            r"/(?:Login Data|Cookies|Web Data|Local State)$|(?:^|/)(?:key4\.db|logins\.json|cookies\.sqlite)$",
            "browser store",
        ),
        (
            r"(?:Google/Chrome|Chromium|BraveSoftware|Microsoft/Edge)(?:/|$)|(?:^|/)\.mozilla/firefox(?:/|$)",
            "browser profile",
        ),
        (r"Library/Keychains(?:/|$)|\.keychain(?:-db)?$", "keychain"),
        (r"(?:^|/)tdata(?:/|$)|discord/Local Storage", "messenger token"),
        (r"^/etc/(?:shadow|gshadow|sudoers)$", "system secrets"),
        (r"(?:^|/)\.env(?:\.local|\.production|\.prod)?$", "env file"),
    )
)

_PERSISTENCE: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), label)
    for p, label in (
        (
            r"(?:^|/)\.(?:bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zprofile|zshenv|zlogin|kshrc|cshrc|tcshrc)$"
            r"|(?:^|/)\.config/fish/(?:config\.fish|conf\.d/)|^/etc/(?:profile|bash\.bashrc|zsh/zshrc|environment)(?:\.d/|$)",
            "shell rc file",
        ),
        (r"^/etc/cron|^/var/spool/cron|(?:^|/)crontab$", "crontab"),
        (r"^/etc/systemd/|(?:^|/)\.config/systemd/|^/(?:usr/)?lib/systemd/", "systemd unit"),
        (r"Library/Launch(?:Agents|Daemons)(?:/|$)", "launchd job"),
        (r"(?:^|/)\.config/autostart(?:/|$)|^/etc/xdg/autostart|^/etc/rc\.local$|^/etc/init\.d/", "autostart"),
        (r"Start Menu/Programs/Startup|CurrentVersion/Run", "Windows autostart"),
        (r"(?:^|/)\.ssh/authorized_keys2?$", "SSH authorized_keys"),
        (r"^/etc/ld\.so\.preload$", "preload"),
        (r"(?:^|/)\.git/hooks/", "git hook"),
        (
            r"(?:^|/)\.claude/(?:settings(?:\.local)?\.json|hooks(?:/|$)|CLAUDE\.md$)|(?:^|/)~/\.claude\.json$"
            r"|(?:^|/)\.(?:cursor|gemini|codex|hermes|windsurf)/(?:mcp\.json|settings\.json|config\.(?:toml|ya?ml)|hooks)",
            "agent settings",
        ),
    )
)

_SYSTEM = re.compile(
    r"^/(?:etc|proc|sys|root|var|dev|boot)(?:/|$)|^~/\.(?:ssh|aws|gnupg|kube|docker|config/gcloud)(?:/|$)"
    r"|^/$|^~/?$|^[A-Za-z]:/(?:Windows|Users)?(?:/|$)",
    re.I,
)


def norm(path: str) -> str:
    """``path`` with slashes, ``~`` for a home directory, no ``./`` or doubled slashes."""
    p = path.strip().strip("'\"").replace("\\", "/")
    p = _HOME.sub("~", p)
    p = re.sub(r"/{2,}", "/", p)
    p = re.sub(r"(?:^|(?<=/))\./", "", p)
    return p


def credential(path: str) -> str | None:
    """What secret ``path`` names (``"SSH private key"``, ``"env file"``, …), or None."""
    p = norm(path)
    for pattern, label in _CREDENTIALS:
        if pattern.search(p):
            return label
    return None


def persistence(path: str) -> str | None:
    """What persistence place ``path`` is (``"shell rc file"``, ``"crontab"``, …), or None."""
    p = norm(path)
    for pattern, label in _PERSISTENCE:
        if pattern.search(p):
            return label
    return None


def system_file(path: str) -> bool:
    """True for system files and folders (/etc, /proc, /root, /var, ~/.ssh and kin)."""
    raw = path.strip().replace("\\", "/")
    return bool(_SYSTEM.search(raw) or _SYSTEM.search(norm(path))) or credential(path) is not None
