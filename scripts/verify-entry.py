#!/usr/bin/env python3
"""verify-entry.py ENTRY.json (--signer 0xADDRESS | --root blake3-tree-v1:HEX) [--files DIR]: docs/lineage/anchor.md §3.
ENTRY.json: a Skill entry, a skills/get result or the anchor alone; DIR: the skill's files, laid out from its root.
Stdlib, blake3, eth-account and PyYAML only, no ledger code. Exit 0: verified; 1: refused, and why; 2: usage."""

# A page of code an outsider reads whole (tests/protocol/test_publish_anchor.py: at most 120 lines of code),
# so it is laid out by hand:
# fmt: off
import argparse, hashlib, json, os, re, sys, unicodedata  # noqa: E401, I001
from pathlib import Path
import eth_account, eth_account.messages, yaml  # noqa: E401
from blake3 import blake3

FORMAT, KEY, KINDS, DIR = "brain-ledger/skill-anchor/1", "dev.brain-ledger/anchor", {"file": 1, "exec": 2}, 3
KEYS = set("format skill prefix version versions root commit signed signer chain folder files".split())  # noqa: SIM905
# lineage.md §8.1's Snapshot fields after root, as lineage/anchor.md §1's anchor carries them;
# the frontmatter, as docs/layouts.md
SIGNED = dict(parentRoot="bytes32", parentCommit="bytes20", tree="bytes20", actor="string", message="bytes32")
FM = re.compile(r"---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)
NAME, N = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*"), 2**256 - 0x14551231950B75FC4402DA1732FC9BEBF  # N: secp256k1's order
AS_WRITTEN = type("AsWritten", (yaml.SafeLoader,), {"yaml_implicit_resolvers": {c: [r for r in rs if "timestamp" not in
    r[0]] for c, rs in yaml.SafeLoader.yaml_implicit_resolvers.items()}})  # lineage/anchor.md §2: YAML 1.1, dates kept
def need(ok, why): return ok or sys.exit(f"FAIL: {why}")  # refuse, saying why
def node(left, right): return blake3(b"\x01" + left + right).digest()  # bundle-hash.md §4: an interior node...
def leaf(kind, name, digest):  # ...and an entry leaf
    return blake3(bytes([0, kind]) + len(name.encode()).to_bytes(2, "big") + name.encode() + digest).digest()
def hexed(value, size, what):  # `size` bytes as lower-case hex
    return need(isinstance(value, str) and re.fullmatch(f"[0-9a-f]{{{2 * size}}}", value),
                f"{what} is not {size} bytes hex") and bytes.fromhex(value)

def walk(path, kind, digest, steps):  # bundle-hash.md §6: one RFC 6962 audit path per segment, the deepest first
    need(isinstance(steps, list) and len(steps) == len(path.split("/")), f"{path!r}: not one step per segment")
    for name, step in zip(reversed(path.split("/")), steps, strict=True):
        need(isinstance(step, dict) and set(step) == {"index", "count", "siblings"}, f"{path!r}: a malformed step")
        i, n, sib = step["index"], step["count"], [hexed(h, 32, f"a sibling of {path!r}") for h in step["siblings"]]
        need(type(i) is int and type(n) is int and 0 <= i < n, f"{path!r}: an index outside its directory")
        digest, kind = leaf(kind, name, digest), DIR
        while n > 1:
            if i % 2 or i + 1 < n:  # a node with a sibling; an odd last node goes up as it is
                need(sib, f"{path!r}: an audit path is too short")
                digest = node(sib.pop(0), digest) if i % 2 else node(digest, sib.pop(0))
            i, n = i // 2, (n + 1) // 2
        need(not sib, f"{path!r}: an audit path is too long")
    return digest

def directory(d):  # bundle-hash.md §4: D of directory d (its names under the skill's) holding the listed files
    level = [leaf(*leaves[t]) if t in leaves else leaf(DIR, t[-1], directory(t)) for t in ((*d, n) for n in kids[d])]
    while len(level) > 1:  # pair left to right; an odd last node goes up as it is
        level = [node(*level[i : i + 2]) if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    return level[0]

def counter(v): return v if type(v) is int and v >= 0 else int(v) if re.fullmatch(r"\s*[0-9]+\s*", str(v)) else None

def path_ok(p):  # bundle-hash.md §1's names, and no '\' or control character
    return isinstance(p, str) and 0 < len(p.encode()) <= 4000 and all(
        s not in ("", ".", "..") and s.casefold() != ".git" and len(s.encode()) <= 255 and
        unicodedata.is_normalized("NFC", s) and not any(c == "\\" or ord(c) < 32 for c in s) for s in p.split("/"))

def signer_of(s, root):  # lineage/anchor.md §3 step 2: the signer, recovered from the EIP-712 digest of lineage.md §8.1
    need(isinstance(s, dict) and set(s) == {*SIGNED, "signature"}, "its signed member is malformed")
    sig, fields, types = s["signature"], {"root": "0x" + root.hex()}, {"root": "bytes32", **SIGNED}
    need(isinstance(sig, str) and re.fullmatch(r"0x[0-9a-f]{128}1[bc]", sig), "a signature is 0x, r, s and v 27|28")
    need(0 < int(sig[66:130], 16) <= N // 2 and isinstance(s["actor"], str), "a high s (EIP-2), or a bad actor")
    for k, t in SIGNED.items():
        fields[k] = s[k] if t == "string" else "0x" + hexed(s[k], int(t[5:]), f"its signed {k}").hex()
    typed = {"types": {"EIP712Domain": [{"name": "name", "type": "string"}, {"name": "version", "type": "string"}],
                       "Snapshot": [{"name": k, "type": t} for k, t in types.items()]}, "primaryType": "Snapshot",
             "domain": {"name": "brain-ledger", "version": "1"}, "message": fields}
    signable = eth_account.messages.encode_typed_data(full_message=typed)
    return eth_account.Account.recover_message(signable, signature=sig).lower(), s["actor"]

sys.excepthook = lambda kind, exc, tb: (sys.stderr.write(f"FAIL: malformed ({kind.__name__}: {exc})\n"), os._exit(1))
ap = argparse.ArgumentParser()
o = [ap.add_argument(arg) for arg in ("entry", "--signer", "--root", "--files")] and ap.parse_args()
o.signer or o.root or ap.error("pin what you trust: --signer ADDRESS or --root ROOT")
once = lambda pairs: dict(pairs) if len(dict(pairs)) == len(pairs) else need(False, "a JSON key given twice")  # noqa: E731
doc = json.loads(Path(o.entry).read_bytes(), object_pairs_hook=once)
doc = doc["skill"] if isinstance(doc.get("skill"), dict) and "format" not in doc else doc
entry, a = (None, doc) if doc.get("format") == FORMAT else (doc, (doc.get("_meta") or {}).get(KEY))
# 1. shape, and what the host pinned
need(isinstance(a, dict) and set(a) == KEYS and a["format"] == FORMAT, f"the entry carries no {FORMAT} object")
skill, prefix, text_root = a["skill"], a["prefix"], a["root"]
need(isinstance(skill, str) and len(skill) <= 64 and NAME.fullmatch(skill), f"skill {skill!r} is not a name")
need(prefix == "" or (path_ok(prefix) and NAME.fullmatch(prefix.rsplit("/")[-1])), f"bad prefix {prefix!r}")
need(type(a["version"]) is int and a["version"] >= 1, f"version {a['version']!r} is not a whole number >= 1")
need(a["versions"] in ("skill-md", "store"), f"versions {a['versions']!r} is not 'skill-md' or 'store'")
root = hexed(text_root[15:] if str(text_root).startswith("blake3-tree-v1:") else text_root, 32, "the root")
commit = hexed(a["commit"], 20, "the commit").hex()
need(not o.root or text_root == o.root, f"the anchor is for root {text_root}, not the trusted {o.root}")
# 2. the signature: who vouches for this root
signer, actor = signer_of(a["signed"], root) if a["signed"] is not None else (None, None)
need(a["signer"] == ({"address": signer, "role": actor} if signer else None), "the signer is not the signature's")
need(not o.signer or signer == o.signer.lower(), f"{text_root} is signed by {signer}, not by the trusted {o.signer}")
# 3. the files: each to the folder, the directory whole, the folder to the root
files, pre, fc = a["files"], prefix + "/" if prefix else "", hexed(a["folder"].get("content"), 32, "the folder")
need(isinstance(files, list) and 0 < len(files) <= 512, "the anchor lists not 1 to 512 files")
need(all(isinstance(f, dict) and set(f) == {"path", "kind", "content", "steps"} for f in files), "a malformed file")
paths = [f["path"] for f in files]
need(all(path_ok(p) and p.startswith(pre) for p in paths), f"a file path is not a path in {pre or 'the folder'}")
need([p.encode() for p in paths] == sorted({p.encode() for p in paths}), "files are not in byte order, each once")
need(len({unicodedata.normalize("NFC", p.casefold()) for p in paths}) == len(paths), "two paths differ only in case")
need(pre + "SKILL.md" in paths and all(f["kind"] in KINDS for f in files), "no SKILL.md, or a bad kind")
for f, p in zip(files, paths, strict=True):
    need(walk(p, KINDS[f["kind"]], hexed(f["content"], 32, f"{p!r}'s content"), f["steps"]) == fc, f"{p!r} is not in F")
leaves = {tuple(p[len(pre) :].split("/")): (KINDS[f["kind"]], p.rsplit("/")[-1], bytes.fromhex(f["content"]))
          for p, f in zip(paths, files, strict=True)}  # each file below the skill's directory, and its leaf
kids = {t[:j]: sorted({u[j] for u in leaves if u[:j] == t[:j]}, key=str.encode) for t in leaves for j in range(len(t))}
up = files[0]["steps"][paths[0].count("/") - prefix.count("/") :]
need((walk(prefix, DIR, directory(()), up) if prefix else directory(())) == fc, "the files are not the whole directory")
for t, f in zip(leaves, files, strict=True):  # step 7: each file's place in each directory, so one form of its proof
    need([(x["index"], x["count"]) for x in f["steps"][: len(t)]] == [(kids[t[:j]].index(t[j]), len(kids[t[:j]]))
         for j in reversed(range(len(t)))], f"{f['path']!r}: a step's index or count is not its place in the files")
need(walk(skill, DIR, fc, a["folder"].get("steps")) == root, f"the folder {skill!r} is not in root {text_root}")
# 4. the entry: its uri, its resources exactly the anchor's files
# the entry's resources and frontmatter, and the skill's name: the last segment of skill/prefix
res, fm, name = (entry or {}).get("resources"), (entry or {}).get("frontmatter"), (prefix or skill).rsplit("/")[-1]
need(entry is None or (isinstance(fm, dict) and fm.get("name") == name and isinstance(fm.get("description"), str)),
     f"the entry's frontmatter does not name the skill {name!r} with a description")
need(entry is None or entry.get("uri") == f"skill://{skill}/{pre}SKILL.md", "the entry's uri is not the anchor's")
uris = [f"skill://{skill}/{p}" for p in paths]
need(entry is None or (isinstance(res, list) and [r.get("uri") for r in res] == uris), "resources are not its files")
need(entry is None or (all(re.fullmatch(r"sha256:[0-9a-f]{64}", str(r.get("digest"))) and type(r.get("size")) is int
                           for r in res) and sum(r["size"] for r in res) <= 16 << 20), "bad digests, sizes or 16 MiB")
if o.files:  # 5. the bytes: C, the entry's sha256 and size; no file more, none less
    found = [os.path.relpath(f"{d}/{n}", o.files).replace(os.sep, "/") for d, _, ns in os.walk(o.files) for n in ns]
    need(not any(os.path.islink(os.path.join(o.files, f)) for f in found), f"{o.files} holds a link")
    need(sorted(found) == sorted(p[len(pre) :] for p in paths), f"{o.files} does not hold exactly the skill's files")
    for i, p in enumerate(paths):
        data, rel = Path(o.files, p[len(pre) :]).read_bytes(), p[len(pre) :]
        need(blake3(b"\x02" + data).hexdigest() == files[i]["content"], f"file {rel!r} is not the root's")
        sha = "sha256:" + hashlib.sha256(data).hexdigest()
        need(res is None or (res[i]["size"], res[i]["digest"]) == (len(data), sha), f"file {rel!r} is not the entry's")
    m = FM.match(Path(o.files, "SKILL.md").read_bytes().decode())  # lineage/anchor.md §2, lineage.md §4.2
    mine = (yaml.load(m.group(1), Loader=AS_WRITTEN) or {}) if m else None
    need(isinstance(mine, dict) and mine.get("name") == name, f"SKILL.md does not name the skill {name!r}")
    meta = mine["metadata"] if isinstance(mine.get("metadata"), dict) else {}
    n = next((c for c in map(counter, (meta.get("version"), meta.get("ledger-version"))) if c is not None), 0)
    need(a["versions"] == "store" or prefix or n == a["version"], f"SKILL.md is at version {n}, not {a['version']}")
    # lineage/anchor.md §3 step 10
    same = entry is None or json.dumps(mine, sort_keys=True) == json.dumps(fm, sort_keys=True)
    need(same, "the entry's frontmatter is not SKILL.md's")
claim = "" if o.files and a["versions"] == "skill-md" and not prefix else " (claimed)"  # else a clone checks it
print(f"OK: skill://{skill}/{pre}SKILL.md v{a['version']}{claim} is in {text_root} (commit {commit}, signer {signer})")
