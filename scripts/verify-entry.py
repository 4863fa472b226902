#!/usr/bin/env python3
"""verify-entry.py ENTRY.json (--signer 0xADDRESS | --root blake3-tree-v1:HEX) [--files DIR]: docs/lineage.md §16.3.
ENTRY.json: a Skill entry, a skills/get result or the anchor alone; DIR: the skill's files, laid out from its root.
Stdlib, blake3 and eth-account only, no ledger code. Exit 0: verified; 1: refused, and why; 2: usage."""
import argparse, base64, hashlib, json, os, re, sys, unicodedata  # noqa: E401, I001
from pathlib import Path
import eth_account.messages, eth_utils  # noqa: E401
from blake3 import blake3

FMT, N = "brain-ledger/skill-anchor/1", 2**256 - 0x14551231950B75FC4402DA1732FC9BEBF  # N: secp256k1's order
HEX64, NAME, SIG = re.compile(r"[0-9a-f]{64}"), re.compile(r"[a-z0-9]+(-[a-z0-9]+)*"), re.compile(r"0x[0-9a-f]{130}")
KEYS = {"format", "skill", "prefix", "version", "root", "commit", "snapshot", "signer", "chain", "folder", "files"}
def need(ok, why): return ok or sys.exit(f"FAIL: {why}")
def h32(x, what): return need(isinstance(x, str) and HEX64.fullmatch(x), f"{what}: not 64 hex") and bytes.fromhex(x)
def node(a, b): return blake3(b"\x01" + a + b).digest()  # bundle-hash.md §4: interior node, entry leaf
def leaf(kind, name, child): return blake3(bytes([0, kind]) + len(name.encode()).to_bytes(2, "big") + name.encode() + child).digest()  # noqa: E501
def walk(path, kind, digest, steps):  # bundle-hash.md §6: one RFC 6962 audit path per segment, the deepest first
    need(isinstance(steps, list) and len(steps) == len(path.split("/")), f"{path!r}: not one step per segment")
    for name, s in zip(reversed(path.split("/")), steps, strict=True):
        need(isinstance(s, dict) and set(s) == {"index", "count", "siblings"}, f"{path!r}: a malformed step")
        i, n, sib = s["index"], s["count"], [h32(h, f"a sibling of {path!r}") for h in s["siblings"]]
        need(type(i) is int and type(n) is int and 0 <= i < n, f"{path!r}: an index outside its directory")
        digest, kind = leaf(kind, name, digest), 3
        while n > 1:
            if i % 2 or i + 1 < n:
                need(sib, f"{path!r}: an audit path is too short")
                digest = node(sib.pop(0), digest) if i % 2 else node(digest, sib.pop(0))
            i, n = i // 2, (n + 1) // 2
        need(not sib, f"{path!r}: an audit path is too long")
    return digest
def directory(files):  # D of a directory from its files' (path, kind, C), the deepest directories first
    dirs = {"": {}}
    for path, kind, c in files:
        parts = path.split("/")
        for i in range(1, len(parts)):
            dirs.setdefault("/".join(parts[:i]), {})
            dirs["/".join(parts[: i - 1])][parts[i - 1]] = None
        dirs["/".join(parts[:-1])][parts[-1]] = (kind, c)
    for d in sorted(dirs, key=lambda p: -p.count("/") - (p != "")):
        items = sorted(dirs[d].items(), key=lambda kv: kv[0].encode())
        level = [leaf(*v[:1], k, v[1]) if v else leaf(3, k, dirs[f"{d}/{k}" if d else k]) for k, v in items]
        while len(level) > 1:  # pair left to right; an odd last node goes up as it is
            level = [node(*level[i : i + 2]) if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
        dirs[d] = level[0]
    return dirs[""]
def path_ok(p):  # bundle-hash.md §1's names, and no '\' or control character
    return isinstance(p, str) and 0 < len(p.encode()) <= 4000 and all(
        s not in ("", ".", "..") and s.casefold() != ".git" and len(s.encode()) <= 255
        and unicodedata.is_normalized("NFC", s) and not any(c == "\\" or ord(c) < 32 for c in s) for s in p.split("/"))

sys.excepthook = lambda kind, exc, tb: (sys.stderr.write(f"FAIL: malformed ({kind.__name__}: {exc})\n"), os._exit(1))
ap = argparse.ArgumentParser()
o = [ap.add_argument(arg) for arg in ("entry", "--signer", "--root", "--files")] and ap.parse_args()
if not (o.signer or o.root):
    ap.error("pin what you trust: --signer ADDRESS or --root ROOT")
once = lambda pairs: dict(pairs) if len(dict(pairs)) == len(pairs) else need(False, "a JSON key given twice")  # noqa: E731
doc = json.loads(Path(o.entry).read_bytes(), object_pairs_hook=once)
doc = doc["skill"] if isinstance(doc.get("skill"), dict) and "format" not in doc else doc
entry, a = (None, doc) if doc.get("format") == FMT else (doc, (doc.get("_meta") or {}).get("dev.brain-ledger/anchor"))
need(isinstance(a, dict) and set(a) == KEYS and a["format"] == FMT, f"the entry carries no {FMT} object")
skill, prefix, commit, text_root = a["skill"], a["prefix"], a["commit"], a["root"]
need(isinstance(skill, str) and len(skill) <= 64 and NAME.fullmatch(skill), f"skill {skill!r} is not a skill name")
need(prefix == "" or (path_ok(prefix) and NAME.fullmatch(prefix.rsplit("/")[-1])), f"bad prefix {prefix!r}")
need(isinstance(text_root, str) and text_root.startswith("blake3-tree-v1:"), f"bad root {text_root!r}")
root = h32(text_root[15:], "the root")
need(not o.root or text_root == o.root, f"the anchor is for root {text_root}, not the trusted {o.root}")
need(type(a["version"]) is int and a["version"] >= 1, f"version {a['version']!r} is not a whole number >= 1")
# 1. the commit object: its id, its Ledger-Root, the signer its EIP-712 signature recovers to (lineage.md §8.1)
raw = base64.b64decode(a["snapshot"], validate=True)
need(base64.b64encode(raw).decode() == a["snapshot"], "the snapshot is not canonical base64")
need(hashlib.sha1(b"commit %d\0" % len(raw) + raw).hexdigest() == commit, f"the snapshot is not commit {commit!r}")
head, _, msg = raw.decode().partition("\n\n")
hdr = [ln.split(" ", 1) for ln in head.split("\n")]
need(hdr[0][0] == "tree" and re.fullmatch(r"[0-9a-f]{40}", hdr[0][1]), f"commit {commit} does not start with its tree")
trailers = {}
for ln in msg.rstrip("\n").split("\n\n")[-1].split("\n"):
    trailers.setdefault(ln.partition(": ")[0], []).append(ln.partition(": ")[2])
need(trailers.get("Ledger-Root") == [text_root], f"commit {commit}'s Ledger-Root is not {text_root}")
signed, _, last = (msg[:-1] if msg.endswith("\n") else msg).rpartition("\n")
signer, actor = None, trailers.get("Ledger-Actor", [""])[0]
if last.startswith("Ledger-Signature: "):
    sig, parents, pr = last[18:], [v for k, v in hdr if k == "parent"], trailers["Ledger-Parent-Root"][0]
    need(SIG.fullmatch(sig) and sig[-2:] in ("1b", "1c") and 0 < int(sig[66:130], 16) <= N // 2, "non-EIP-2 signature")
    values = {"root": ("bytes32", "0x" + root.hex()), "parentRoot": ("bytes32", "0x" + ("0" * 64 if pr == "none" else
              pr[15:])), "parentCommit": ("bytes20", "0x" + (parents or ["0" * 40])[0]), "tree": ("bytes20", "0x" +
              hdr[0][1]), "actor": ("string", actor), "message": ("bytes32", eth_utils.keccak(signed.encode() + b"\n"))}
    typed = {"types": {"EIP712Domain": [{"name": "name", "type": "string"}, {"name": "version", "type": "string"}],
                       "Snapshot": [{"name": k, "type": t} for k, (t, _) in values.items()]}, "primaryType": "Snapshot",
             "domain": {"name": "brain-ledger", "version": "1"}, "message": {k: v for k, (_, v) in values.items()}}
    signer = eth_account.Account.recover_message(eth_account.messages.encode_typed_data(full_message=typed),
                                                 signature=sig).lower()
need(a["signer"] == ({"address": signer, "role": actor} if signer else None), f"the signer is not commit {commit}'s")
need(not o.signer or signer == o.signer.lower(), f"commit {commit} is signed by {signer}, not the trusted {o.signer}")
changed = [c.split(" ") for c in trailers.get("Ledger-Change", [])]  # the commit's word on the version, if it says
need(all(c[1] != skill or c[0] == "delete" or int(c[2]) == a["version"] for c in changed), "another version")
# 2. the files: each to the folder, the directory whole, the folder to the root
folder, files, pre = a["folder"], a["files"], prefix + "/" if prefix else ""
need(isinstance(files, list) and 0 < len(files) <= 512, "the anchor lists not 1 to 512 files")
need(all(isinstance(f, dict) and set(f) == {"path", "kind", "content", "steps"} for f in files), "a malformed file")
paths = [f["path"] for f in files]
need(all(path_ok(p) and p.startswith(pre) for p in paths), f"a file path is not a path in {pre or 'the folder'}")
need([p.encode() for p in paths] == sorted({p.encode() for p in paths}), "files are not in byte order, each once")
need(len({unicodedata.normalize("NFC", p.casefold()) for p in paths}) == len(paths), "two paths differ only in case")
need(pre + "SKILL.md" in paths and all(f["kind"] in ("file", "exec") for f in files), "no SKILL.md, or a bad kind")
kinds, fc = {"file": 1, "exec": 2}, h32(folder.get("content"), "the folder's content")
for f in files:
    need(walk(f["path"], kinds[f["kind"]], h32(f["content"], f["path"]), f["steps"]) == fc, f"{f['path']!r}: not in it")
here = directory([(f["path"][len(pre) :], kinds[f["kind"]], bytes.fromhex(f["content"])) for f in files])
up = files[0]["steps"][paths[0].count("/") - prefix.count("/") :] if prefix else None
need((walk(prefix, 3, here, up) if prefix else here) == fc, "the files are not the whole directory (one dropped?)")
need(walk(skill, 3, fc, folder.get("steps")) == root, f"the folder {skill!r} is not in root {text_root}")
res = entry.get("resources") if entry is not None else None  # 3. the entry: its uri, its resources the anchor's files
need(entry is None or entry.get("uri") == f"skill://{skill}/{pre}SKILL.md", "the entry's uri is not the anchor's")
uris = [r.get("uri") for r in res] if isinstance(res, list) else None
need(entry is None or uris == [f"skill://{skill}/{p}" for p in paths], "the resources are not the anchor's files")
need(entry is None or (all(re.fullmatch(r"sha256:[0-9a-f]{64}", str(r.get("digest"))) and type(r.get("size")) is int
     for r in res) and sum(r["size"] for r in res) <= 16 << 20), "bad digests or sizes, or over 16 MiB")
if o.files:  # 4. the bytes: C, the entry's sha256 and size; no file more, none less
    found = [os.path.relpath(f"{d}/{n}", o.files).replace(os.sep, "/") for d, _, ns in os.walk(o.files) for n in ns]
    need(not any(os.path.islink(os.path.join(o.files, f)) for f in found), f"{o.files} holds a link")
    need(sorted(found) == sorted(p[len(pre) :] for p in paths), f"{o.files} does not hold exactly the skill's files")
    for i, p in enumerate(paths):
        data = Path(o.files, p[len(pre) :]).read_bytes()
        need(blake3(b"\x02" + data).hexdigest() == files[i]["content"], f"file {p[len(pre):]!r} is not the root's")
        need(res is None or (res[i].get("size"), res[i].get("digest")) == (len(data), "sha256:" + hashlib.sha256(data)
             .hexdigest()), f"file {p[len(pre):]!r} is not the entry's digest and size")
print(f"OK: skill://{skill}/{pre}SKILL.md v{a['version']} is in {text_root} (commit {commit}, signer {signer})")
