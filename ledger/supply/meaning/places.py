"""Where secrets, persistence and trusted installers live: the knowledge every analyser shares.

Paths are matched after normalisation (``$HOME``, ``${HOME}``, ``/home/NAME``, ``/Users/NAME``,
``/root`` and ``%USERPROFILE%`` all read as ``~``), lower-cased where the platform is
case-insensitive anyway.  The lists are documented in docs/scanner.md ("Behaviours").
"""

from __future__ import annotations

import re

from ledger.supply.scanrules import DROP_HOSTS

__all__ = [
    "AGENT_SAFETY_OFF",
    "CREDENTIALS",
    "DROP_HOSTS",
    "PERSISTENCE",
    "TOKEN_COMMANDS",
    "VENDOR_INSTALLERS",
    "credential",
    "documented_flags",
    "drop_host",
    "home",
    "ip_host",
    "issuer",
    "persistence",
    "vendor",
]

# A secret store, as a pattern over a path with the home directory spelled ``~``.
CREDENTIALS = re.compile(
    r"~/\.ssh/(?!(?:config|known_hosts\w*|authorized_keys\w*|[\w.-]+\.pub)$)[\w.-]*$|~/\.ssh/?$"
    r"|(?:^|/)id_(?:rsa|dsa|ecdsa|ed25519)(?:_[\w-]+)?$"
    r"|\.aws/(?:credentials|config)$|\.aws/?$|\.config/gcloud\b|\.kube/config$|\.docker/config\.json$"
    r"|\.git-credentials$|\.netrc$|\.npmrc$|\.pypirc$|\.gnupg\b|\.password-store\b"
    r"|wallet\.dat$|\.ethereum/keystore|\.electrum\b|\.bitcoin\b|/exodus\b|/atomic/|solana/id\.json$|\.config/solana\b"
    r"|\blogin data$|\bcookies(?:\.sqlite)?$|\bkey[34]\.db$|\blogins\.json$|\bweb data$|local state$"
    r"|\.mozilla/firefox|google/chrome|chromium/|bravesoftware|/keychains?/|\.keychain(?:-db)?$"
    r"|(?:^|/)\.env(?:\.local|\.production|\.prod|\.development)?$"
    r"|^/etc/(?:shadow|gshadow|sudoers)$|/proc/self/environ$|\.claude/\.credentials\.json$|\.config/gh/hosts\.yml$",
    re.I,
)

# A place whose contents run again later: shell start-up files, schedulers, service managers,
# login items, agent settings and hooks, SSH access.
PERSISTENCE = re.compile(
    r"~/\.(?:bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv|zlogin|kshrc|cshrc|tcshrc)$"
    r"|~/\.config/fish/config\.fish$|^/etc/(?:profile|bash\.bashrc|zsh/zshrc|environment|rc\.local|ld\.so\.preload)\b"
    r"|^/etc/profile\.d/|^/etc/cron|^/var/spool/cron|^/etc/anacrontab|^/etc/init\.d/|^/etc/sudoers"
    r"|^/etc/systemd/|^/lib/systemd/|^/usr/lib/systemd/|~/\.config/systemd/|\.(?:service|timer)$"
    r"|/library/launch(?:agents|daemons)/|~/\.config/autostart/|\.desktop$"
    r"|(?:^|/)\.claude/settings(?:\.local)?\.json$|(?:^|/)\.claude/hooks/|(?:^|/)\.git/hooks/"
    r"|~/\.ssh/authorized_keys\w*$|~/\.config/(?:codex|gemini|cursor)/|(?:^|/)\.cursor/|(?:^|/)\.gemini/settings\.json$",
    re.I,
)

# HTTPS installer origins that vendors publish as ``curl … | sh``: host, and the path prefix the
# installer lives under ("" = any path on that host).  Built from what the public skills of
# anthropics/skills and hermes-agent use, plus well-known vendors (docs/scanner.md).
VENDOR_INSTALLERS: tuple[tuple[str, str], ...] = (
    ("sh.rustup.rs", ""),
    ("static.rust-lang.org", "/rustup/"),
    ("astral.sh", ""),
    ("get.docker.com", ""),
    ("bun.sh", "/install"),
    ("deno.land", "/install.sh"),
    ("deno.land", "/x/install/"),
    ("raw.githubusercontent.com", "/homebrew/"),
    ("ollama.com", "/install.sh"),
    ("ollama.ai", "/install.sh"),
    ("install.python-poetry.org", ""),
    ("get.pnpm.io", ""),
    ("raw.githubusercontent.com", "/nvm-sh/nvm/"),
    ("fnm.vercel.app", "/install"),
    ("get.volta.sh", ""),
    ("starship.rs", "/install.sh"),
    ("sdk.cloud.google.com", ""),
    ("cli.github.com", ""),
    ("claude.ai", "/install.sh"),
    ("hermes-agent.nousresearch.com", "/install.sh"),
    ("hf.co", "/cli/install.sh"),
    ("huggingface.co", "/cli/install.sh"),
    ("cli.inference.sh", ""),
    ("byterover.dev", "/install.sh"),
    ("lambdalabs.com", "/install-lambda-stack.sh"),
    ("x.ai", "/cli/install.sh"),
    ("parallel.ai", "/install.sh"),
    ("antigravity.google", "/cli/"),
    ("deb.nodesource.com", ""),
    ("rpm.nodesource.com", ""),
    ("raw.githubusercontent.com", "/pimalaya/himalaya/"),
    ("raw.githubusercontent.com", "/unslothai/unsloth/"),
    ("repo.anaconda.com", "/miniconda/"),
    ("repo.anaconda.com", "/archive/"),
    ("github.com", "/conda-forge/miniforge/releases/"),
    ("github.com", "/cloudflare/cloudflared/releases/"),
    ("raw.githubusercontent.com", "/xdevplatform/xurl/"),
    ("ntn.dev", ""),
    ("pyenv.run", ""),
    ("get.sdkman.io", ""),
    ("foundry.paradigm.xyz", ""),
    ("sh.flox.dev", ""),
    ("install.determinate.systems", "/nix"),
    ("nixos.org", "/nix/install"),
    ("tailscale.com", "/install.sh"),
    ("get.k3s.io", ""),
    ("raw.githubusercontent.com", "/helm/helm/"),
    ("opencode.ai", "/install"),
    ("cursor.com", "/install"),
    ("mise.run", ""),
    ("pixi.sh", "/install.sh"),
    ("modular.com", "/install"),
    ("fly.io", "/install.sh"),
    ("get.jenkins.io", ""),
    ("cli.doppler.com", "/install.sh"),
    ("supabase.com", "/install"),
    ("vercel.com", "/install"),
    ("aka.ms", "/installazurecli"),
    ("get.rvm.io", ""),
    ("raw.githubusercontent.com", "/ohmyzsh/ohmyzsh/"),
    ("raw.githubusercontent.com", "/pyenv/pyenv-installer/"),
    ("raw.githubusercontent.com", "/rbenv/rbenv-installer/"),
    ("raw.githubusercontent.com", "/nodesource/distributions/"),
    ("dot.net", "/v1/dotnet-install"),
    ("get.pulumi.com", ""),
    ("cli-assets.heroku.com", "/install"),
    ("get.acme.sh", ""),
    ("sh.vector.dev", ""),
    ("get.jetify.com", ""),
    ("install.duckdb.org", ""),
    ("get.trunk.io", ""),
    ("dprint.dev", "/install.sh"),
    ("moonrepo.dev", "/install/"),
    ("get.rke2.io", ""),
    ("install.meteor.com", ""),
    ("get.haskellstack.org", ""),
    ("get-ghcup.haskell.org", ""),
    ("install.julialang.org", ""),
    ("micro.mamba.pm", "/install.sh"),
    ("developer.download.nvidia.com", ""),
    ("www.npmjs.com", "/install.sh"),
    ("test.docker.com", ""),
    ("get.scoop.sh", ""),
    ("community.chocolatey.org", "/install.ps1"),
)

# Flags that start a coding agent with its permission prompts or its sandbox off (lower-cased words).
AGENT_SAFETY_OFF = frozenset(
    {
        "--dangerously-skip-permissions",
        "--dangerously-bypass-approvals-and-sandbox",
        "--yolo",
        "bypasspermissions",
        "danger-full-access",
    }
)
# A line that documents a command-line flag: a table row, a list item or a help line that starts
# with the flag and goes on to say what it does ("| `--yolo` | No sandbox, no approvals |").
_FLAG_DOC = re.compile(r"^\s*(?:\|\s*|[-*+]\s+)?`?(--[a-z][\w-]*)[^|\n]*?`?\s*(?:\||\s{2,}|:|—|-\s)\s*\S", re.I)


def documented_flags(text: str) -> frozenset[str]:
    """The :data:`AGENT_SAFETY_OFF` flags a document explains (a flags table row, a list item or a
    help line naming the flag and what it does): a skill that documents an agent CLI's options,
    dangerous ones among them, lets its reader choose; one that only uses them does not."""
    out: set[str] = set()
    for line in text.splitlines():
        m = _FLAG_DOC.match(line)
        if m:
            low = line.lower()
            out.update(f for f in AGENT_SAFETY_OFF if f in low)
    return frozenset(out)


# Commands that print a credential (their non-option words): reading their output is reading the secret.
TOKEN_COMMANDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "gh": (("auth", "token"),),
    "glab": (("auth", "token"),),
    "aws": (("configure", "get"), ("configure", "export-credentials"), ("sts", "get-session-token")),
    "gcloud": (("auth", "print-access-token"), ("auth", "print-identity-token"), ("auth", "application-default")),
    "az": (("account", "get-access-token"),),
    "op": (("read",), ("item", "get")),
    "vault": (("read",), ("kv", "get"), ("token", "lookup")),
    "doctl": (("auth", "token"),),
    "heroku": (("auth:token",),),
    "npm": (("token", "list"),),
}
# The hosts a credential is meant for, by a word of where it was read (a token command, a
# credential file): sending it there is using it, not exfiltrating it.
_ISSUERS = (
    (re.compile(r"^gh\b|git-credentials|/gh/hosts", re.I), ("github.com", "githubusercontent.com", "gitlab.com")),
    (re.compile(r"^glab\b", re.I), ("gitlab.com",)),
    (re.compile(r"^aws\b|\.aws\b", re.I), ("amazonaws.com",)),
    (re.compile(r"^gcloud\b|gcloud", re.I), ("googleapis.com", "google.com")),
    (re.compile(r"^az\b|\.azure\b", re.I), ("azure.com", "microsoft.com", "windows.net", "azure.net")),
    (re.compile(r"^doctl\b", re.I), ("digitalocean.com",)),
    (re.compile(r"^heroku\b", re.I), ("heroku.com",)),
    (re.compile(r"\.npmrc", re.I), ("npmjs.org", "npmjs.com")),
    (re.compile(r"\.pypirc", re.I), ("pypi.org",)),
    (re.compile(r"\.docker/config", re.I), ("docker.io", "docker.com")),
)

_HOME = re.compile(r"^(?:\$HOME|\$\{HOME\}|%USERPROFILE%|%HOMEPATH%|/home/[^/]+|/Users/[^/]+|/root)(?=/|$)")
_IP = re.compile(r"^(?:\d{1,3}\.){3}\d{1,3}$|^\[?[0-9a-f]*:[0-9a-f:]+\]?$|^0x[0-9a-f]{8}$|^\d{8,10}$", re.I)


def home(path: str) -> str:
    """``path`` with its home directory spelled ``~`` (and ``~user`` read as ``~``)."""
    path = path.strip().strip("\"'")
    path = re.sub(r"^~[\w.-]+(?=/|$)", "~", path)
    return _HOME.sub("~", path).replace("\\", "/")


def credential(path: str) -> bool:
    """Whether ``path`` names a secret store (SSH keys, cloud and wallet files, browser stores, .env)."""
    p = home(path).rstrip("/") or path
    return bool(CREDENTIALS.search(p))


def persistence(path: str) -> bool:
    """Whether writing ``path`` makes something run again later (rc files, cron, systemd, login items, hooks)."""
    return bool(PERSISTENCE.search(home(path)))


def ip_host(host: str) -> bool:
    return bool(_IP.match(host))


def drop_host(url: str) -> bool:
    low = url.lower().split("://", 1)[-1].split("?")[0][:160]
    return any(d in low for d in DROP_HOSTS)


def vendor(url: str) -> bool:
    """Whether ``url`` is an HTTPS installer origin on :data:`VENDOR_INSTALLERS` (a host listed without
    a path prefix vouches for its subdomains too: ``rye.astral.sh``)."""
    m = re.match(r"https://([^/\s:@]+)(?::443)?(/[^\s?#]*)?", url.strip(), re.I)
    if not m:
        return False
    host, path = m.group(1).lower().rstrip("."), (m.group(2) or "/").lower()
    return any((host == h or (not p and host.endswith("." + h))) and path.startswith(p) for h, p in VENDOR_INSTALLERS)


def issuer(credential: str, url: str) -> bool:
    """Whether ``url`` goes to the service that issued ``credential`` (a :data:`TOKEN_COMMANDS` read such
    as ``"gh auth token"``, or a credential file): ``curl -H "Authorization: $(gh auth token)"
    https://api.github.com/…`` uses the token, it does not send it out."""
    hosts = [h for pattern, named in _ISSUERS if pattern.search(credential) for h in named]
    m = re.match(r"https://([^/\s:@]+)", url.strip(), re.I)
    host = m.group(1).lower().rstrip(".") if m else ""
    return bool(host) and any(host == h or host.endswith("." + h) for h in hosts)
