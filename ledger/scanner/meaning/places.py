"""Where secrets, persistence and trusted installers live: the knowledge every analyser shares.

Paths are matched after normalisation (:func:`home`: ``$HOME``, ``${HOME}``, ``/home/NAME``,
``/Users/NAME``, ``/root``, ``C:\\Users\\NAME``, ``%USERPROFILE%`` and ``$env:USERPROFILE`` all read
as ``~``), case-insensitively.  The shell, Python, script, configuration and symlink analysers all
read these lists: one list of credential places, one of persistence places, one of vendor
installers.  The lists are documented in docs/scanner.md ("Behaviours").
"""

from __future__ import annotations

import re

from ledger.scanner.rules import DROP_HOSTS, issued_by
from ledger.scanner.text import words

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
    "system_file",
    "vendor",
]

# A secret store: (pattern over a path with the home directory spelled ``~``, what it holds).
# SSH: private keys and the whole folder, never config, known_hosts, authorized_keys or a .pub
# key.  ``.env`` files are "env file": alone a medium (every API client loads one).
CREDENTIALS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), label)
    for p, label in (
        (
            r"~/\.ssh/(?!(?:config|known_hosts\w*|authorized_keys\w*|[\w.-]+\.pub)$)[\w.*-]*$|(?:^|/)\.ssh/?$"
            r"|(?:^|/)\.ssh/(?:id_[\w-]+(?<!\.pub)|identity|\*[^/]*)$|(?:^|/)id_(?:rsa|dsa|ecdsa|ed25519)(?:_[\w-]+)?$",
            "SSH private key",
        ),
        (r"(?:^|/)\.aws(?:/credentials|/config|/\*|/?$)", "AWS credentials"),
        (r"(?:^|/)\.config/gcloud\b", "gcloud credentials"),
        (r"(?:^|/)\.azure(?:/|$)", "Azure credentials"),
        (r"(?:^|/)\.kube/config$", "kubeconfig"),
        (r"(?:^|/)\.docker/config\.json$", "docker credentials"),
        (
            r"(?:^|/)\.(?:git-credentials|netrc|pgpass|npmrc|pypirc)$|\.config/gh/hosts\.yml$|\.claude/\.credentials\.json$",
            "token file",
        ),
        (r"\.gnupg\b", "GnuPG keys"),
        (r"\.password-store\b", "password store"),
        (
            r"wallet\.dat$|(?:^|/)\.(?:bitcoin|ethereum|electrum|monero)\b|/keystore(?:/|$)|\.ethereum/keystore"
            r"|(?:^|/)(?:exodus|atomic|electrum)/|/exodus\b|solana/id\.json$|\.config/solana\b"
            r"|nkbihfbeogaeaoehlefnkodbefgpgknn",
            "crypto wallet",
        ),
        (
            r"\blogin data$|\bcookies(?:\.sqlite)?$|\bkey[34]\.db$|\blogins\.json$|\bweb data$|local state$",
            "browser store",
        ),
        (r"(?:google/chrome|chromium|bravesoftware|microsoft/edge)(?:/|$)|\.mozilla/firefox", "browser profile"),
        (r"/keychains?/|library/keychains(?:/|$)|\.keychain(?:-db)?$", "keychain"),
        (r"(?:^|/)tdata(?:/|$)|discord/local storage", "messenger token"),
        (r"^/etc/(?:shadow|gshadow|sudoers)$|/proc/(?:self|\d+|\$\w+|\*)/environ$", "system secrets"),
        (r"(?:^|/)\.env(?:\.local|\.production|\.prod|\.development)?$", "env file"),
    )
)

# A place whose contents run again later: (pattern over a normalised path, what it is).
PERSISTENCE: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), label)
    for p, label in (
        (
            r"(?:^|/)\.(?:bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zprofile|zshenv|zlogin|kshrc|cshrc"
            r"|tcshrc)$|(?:^|/)\.config/fish/(?:config\.fish|conf\.d/)"
            r"|^/etc/(?:profile|bash\.bashrc|zsh/zshrc|environment)\b|^/etc/profile\.d/|(?:^|/)\.pam_environment$",
            "shell rc file",
        ),
        (r"^/etc/cron|^/var/spool/cron|^/etc/anacrontab|(?:^|/)crontab$", "crontab"),
        (r"^/etc/systemd/|^/(?:usr/)?lib/systemd/|(?:^|/)\.config/systemd/|\.(?:service|timer)$", "systemd unit"),
        (r"library/launch(?:agents|daemons)(?:/|$)", "launchd job"),
        (
            r"(?:^|/)\.config/autostart(?:/|$)|^/etc/xdg/autostart|^/etc/rc\.local\b|^/etc/init\.d/|\.desktop$",
            "autostart",
        ),
        (r"start menu/programs/startup|currentversion/run", "Windows autostart"),
        (r"(?:^|/)\.ssh/authorized_keys\w*$", "SSH authorized_keys"),
        (r"^/etc/ld\.so\.preload\b", "preload"),
        (r"^/etc/sudoers", "sudoers"),
        (r"(?:^|/)\.git/hooks/", "git hook"),
        (
            r"(?:^|/)\.claude/(?:settings(?:\.local)?\.json$|hooks(?:/|$)|CLAUDE\.md$)|~/\.claude\.json$"
            r"|(?:^|/)\.(?:cursor|gemini|codex|hermes|windsurf)/(?:mcp\.json|settings\.json|config\.(?:toml|ya?ml)|hooks)"
            r"|~/\.config/(?:codex|gemini|cursor)/|(?:^|/)\.cursor/",
            "agent settings",
        ),
    )
)

# System files and folders: a symlink to one is critical (and so is one to a secret store).
_SYSTEM = re.compile(
    r"^/(?:etc|proc|sys|root|var|dev|boot)(?:/|$)|^~/\.(?:ssh|aws|gnupg|kube|docker|config/gcloud)(?:/|$)"
    r"|^/$|^~/?$|^[A-Za-z]:/(?:Windows|Users)?(?:/|$)",
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
    # PowerShell and Node installers (the script analyser's list, folded in)
    ("win.rustup.rs", ""),
    ("dot.net", ""),
    ("aka.ms", ""),
    ("chocolatey.org", ""),
    ("opencode.ai", ""),
    ("ollama.com", "/install.ps1"),
    ("claude.ai", "/install.ps1"),
    ("deno.land", "/install.ps1"),
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
_HOME = re.compile(
    r"^(?:\$HOME|\$\{HOME\}|%USERPROFILE%|%HOMEPATH%|\$env:USERPROFILE|/home/[^/]+|/Users/[^/]+|/root|C:/Users/[^/]+)(?=/|$)",
    re.I,
)
_IP = re.compile(r"^(?:\d{1,3}\.){3}\d{1,3}$|^\[?[0-9a-f]*:[0-9a-f:]+\]?$|^0x[0-9a-f]{8}$|^\d{8,10}$", re.I)


def home(path: str) -> str:
    """``path`` with slashes, its home directory spelled ``~`` (``~user`` too), no ``./`` or doubled
    slashes."""
    p = path.strip().strip("\"'").replace("\\", "/")
    p = re.sub(r"^~[\w.-]+(?=/|$)", "~", p)
    p = _HOME.sub("~", p)
    p = re.sub(r"/{2,}", "/", p)
    return re.sub(r"(?:^|(?<=/))\./", "", p)


def _label(places: tuple[tuple[re.Pattern[str], str], ...], path: str) -> str | None:
    p = home(path)
    p = p.rstrip("/") or p
    return next((label for pattern, label in places if pattern.search(p)), None)


def credential(path: str) -> str | None:
    """What secret store ``path`` names (``"SSH private key"``, ``"env file"``, …), or None."""
    return _label(CREDENTIALS, path)


def persistence(path: str) -> str | None:
    """What persistence place ``path`` is (``"shell rc file"``, ``"crontab"``, …), or None: writing it
    makes something run again later."""
    return _label(PERSISTENCE, path)


def system_file(path: str) -> bool:
    """True for system files and folders (/etc, /proc, /root, /var, ~/.ssh and kin) and secret stores."""
    raw = path.strip().replace("\\", "/")
    return bool(_SYSTEM.search(raw) or _SYSTEM.search(home(path))) or credential(path) is not None


def ip_host(host: str) -> bool:
    return bool(_IP.match(host))


def drop_host(url: str) -> bool:
    low = url.lower().split("://", 1)[-1].split("?")[0][:160]
    return any(d in low for d in DROP_HOSTS)


def vendor(url: str) -> bool:
    """Whether ``url`` is an HTTPS installer origin on :data:`VENDOR_INSTALLERS` (a host listed without
    a path prefix vouches for its subdomains too: ``rye.astral.sh``)."""
    m = re.match(r"https://([^/\s:@]+)(?::443)?(/[^\s?#]*)?", url.strip(), re.I)
    # userinfo: https://sh.rustup.rs@dl.invalid/ goes to dl.invalid
    if not m or "@" in url.strip()[8:].split("/", 1)[0]:
        return False
    host, path = m.group(1).lower().rstrip("."), (m.group(2) or "/").lower()
    return any((host == h or (not p and host.endswith("." + h))) and path.startswith(p) for h, p in VENDOR_INSTALLERS)


# --- persistence (shell.py, config.py): what persists and whether it can do harm ---------------

# Backup tools whose scheduled run names a remote repository: the URL is where backups go, not code
BACKUP_TOOLS = frozenset({"restic", "borg", "borgmatic", "rclone", "duplicity", "kopia", "rsnapshot", "tarsnap"})
_LIVE = re.compile(
    r"\b(?:ba|z|da|k)?sh\s+-\w*[ci]\b|\b(?:python[\d.]*|perl|ruby|node|php|osascript)\s+-\w*[ce]\b|\beval\b|\$\(|`"
    r"|/tmp/|/dev/shm|/var/tmp|\bLD_PRELOAD|\bLD_LIBRARY_PATH|\bDYLD_|PROMPT_COMMAND|\btrap\b|\bsource\s|^\s*\.\s"
    r"|\b(?:curl|wget|nc|ncat|socat|base64|xxd)\b|https?://|/dev/(?:tcp|udp)",
    re.I | re.M,
)
_INERT_RC = re.compile(
    r"^\s*(?:export\s+PATH=|PATH=|alias\s+(?!(?:sudo|su|doas|ssh|passwd|login|git|ls|cd|cat|curl)=)[\w.-]+=|#|$)"
)
_AGENT_PLACES = re.compile(
    r"\.(?:claude|cursor|codex|gemini|continue|windsurf)\b|/skills?/|settings[\w.-]*\.json|mcp", re.I
)


def backup_job(cmd: str) -> bool:
    """Whether ``cmd`` is one run of a named backup tool (:data:`BACKUP_TOOLS`): a simple command,
    no pipe, list, substitution or redirection."""
    words = cmd.strip().split()
    while words and (words[0] in ("nice", "ionice", "sudo", "flock") or words[0].startswith("-") or "=" in words[0]):
        words = words[1:]
    return bool(words) and words[0].rsplit("/", 1)[-1] in BACKUP_TOOLS and not re.search(r"[|;&<>`]|\$\(", cmd)


def inert(text: str, place: str, *, shipped: bool = False) -> bool:
    """Whether what a script makes persist can do no harm by itself: PATH and alias lines in a
    shell rc file, a unit, cron line or other file that runs a program without fetching, decoding,
    opening a shell or preloading code (``text``: what was written, when known), or a copy of a
    file the skill itself ships (``shipped``; that file is scanned on its own).  Never for the
    places an agent reads its skills, settings or MCP servers from."""
    if _AGENT_PLACES.search(place):
        return False
    if shipped:
        return True
    if not text.strip():
        return False
    if re.search(r"(?:^|/)\.(?:bash|zsh|ksh)?(?:rc|profile|_profile|_login|env)$|/etc/profile", place):
        return all(_INERT_RC.match(ln) for ln in text.split("\n"))
    return not _LIVE.search(text)


def issuer(credential: str, url: str) -> bool:
    """Whether ``url`` goes to the service that issued ``credential`` (a :data:`TOKEN_COMMANDS` read such
    as ``"gh auth token"``, or a credential file): ``curl -H "Authorization: $(gh auth token)"
    https://api.github.com/…`` uses the token, it does not send it out."""
    m = re.match(r"https://([^/\s:@]+)", url.strip(), re.I)
    return bool(m) and issued_by(credential, m.group(1))


# --- prose (meaning/prose.py): download-and-run written in sentences -----------------------

# Paste sites: a "page" whose text the reader is told to paste into a terminal.
PASTE_HOSTS: tuple[str, ...] = (
    "glot.io",
    "pastebin.com",
    "pastebin.pl",
    "rentry.co",
    "rentry.org",
    "hastebin.com",
    "hastebin.skyra.pw",
    "paste.ee",
    "ghostbin.com",
    "ghostbin.co",
    "controlc.com",
    "dpaste.org",
    "dpaste.com",
    "justpaste.it",
    "paste.rs",
    "termbin.com",
    "ix.io",
    "sprunge.us",
    "pastes.io",
    "paste.mozilla.org",
    "katb.in",
    "0bin.net",
    "privatebin.net",
    "telegra.ph",
    "gist.githubusercontent.com",
)

# Official download sites (host, path prefix; a host vouches for its subdomains): where vendors
# publish their installers and binaries.  A download-and-run from here is not a finding (a raw
# binary is medium); docs/scanner.md, "Prose".
OFFICIAL_DOWNLOADS: tuple[tuple[str, str], ...] = tuple(
    (h, "")
    for h in words(
        "python.org nodejs.org docker.com git-scm.com golang.org go.dev rust-lang.org rustup.rs brew.sh "
        "code.visualstudio.com visualstudio.microsoft.com microsoft.com apple.com mozilla.org jetbrains.com "
        "cli.github.com desktop.github.com git-lfs.com nodesource.com npmjs.com pypi.org anaconda.com "
        "conda.io java.com oracle.com adoptium.net postgresql.org mysql.com mongodb.com redis.io sqlite.org "
        "cloud.google.com dl.google.com developer.android.com aws.amazon.com awscli.amazonaws.com "
        "azure.microsoft.com hashicorp.com releases.hashicorp.com kubernetes.io dl.k8s.io helm.sh ollama.com "
        "anthropic.com claude.ai claude.com openai.com ffmpeg.org imagemagick.org pandoc.org tug.org "
        "latex-project.org libreoffice.org inkscape.org gimp.org blender.org obsproject.com videolan.org "
        "7-zip.org ubuntu.com debian.org fedoraproject.org archlinux.org deno.com deno.land bun.sh astral.sh "
        "tailscale.com cloudflare.com wireguard.com nvidia.com cursor.com zed.dev warp.dev iterm2.com "
        "obsidian.md notion.so slack.com discord.com zoom.us google.com chrome.google.com signal.org "
        "telegram.org whatsapp.com spotify.com figma.com canva.com postman.com getcomposer.org php.net "
        "ruby-lang.org rubygems.org perl.org julialang.org r-project.org cran.r-project.org posit.co "
        "dotnet.microsoft.com chocolatey.org scoop.sh winget.run flutter.dev dart.dev kotlinlang.org "
        "gradle.org maven.apache.org apache.org nginx.org caddyserver.com terraform.io pulumi.com vercel.com "
        "netlify.com fly.io heroku.com supabase.com firebase.google.com mitmproxy.org wireshark.org nmap.org "
        "huggingface.co pytorch.org tensorflow.org lmstudio.ai jan.ai gpt4all.io nousresearch.com "
        "hermes-agent.nousresearch.com tesseract-ocr.github.io calibre-ebook.com zotero.org yt-dlp.org "
        "ytdl-org.github.io stripe.com ngrok.com ghostscript.com "
    )
)
