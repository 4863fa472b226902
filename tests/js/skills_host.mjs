// An outside host of the MCP Skills extension: the official TypeScript SDK's own SkillsClient
// (@modelcontextprotocol/client, ext/skills), pinned in package-lock.json, driving `ledger mcp`.
// Usage: node tests/js/skills_host.mjs LEDGER BRAIN  → one JSON document on stdout, for tests/test_mcp_skills.py.
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/client";
import { SkillsClient, SkillVerificationError } from "@modelcontextprotocol/client/ext/skills";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [ledger, brain] = process.argv.slice(2);
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("LEDGER_") || k === "LEDGER_KEYS"));
const transport = new StdioClientTransport({ command: ledger, args: ["--brain", brain, "mcp"], env, stderr: "ignore" });
const client = new Client({ name: "skills-host", version: "1.0.0" });
await client.connect(transport);
const skills = new SkillsClient(client);
const out = { protocolVersion: client.getNegotiatedProtocolVersion(), supported: skills.supported,
              directoryRead: skills.directoryRead, skills: [], refused: {} };

const listing = await skills.list();  // every page; throws on any entry the SDK finds invalid
out.invalid = listing.invalid;
for (const entry of listing.skills) {
  const got = await skills.get(entry.uri);
  const files = [];
  for (const r of entry.resources) {
    const file = await skills.read(entry, r.uri);  // size, digest and (SKILL.md) frontmatter checked by the SDK
    files.push({ uri: file.uri, verified: file.verified, size: file.bytes.length,
                 sha256: "sha256:" + createHash("sha256").update(file.bytes).digest("hex"),
                 frontmatter: file.frontmatter ?? null });
  }
  const root = entry.uri.slice(0, -"/SKILL.md".length);
  const children = (await skills.readDirectory(root)).resources.map((c) => [c.uri, c.mimeType]);
  out.skills.push({ uri: entry.uri, same: JSON.stringify(got.skill) === JSON.stringify(entry), files, children,
                    anchor: Object.keys(entry._meta ?? {}) });
}
// The SDK's checks are real: an entry whose digest was changed is refused on read.
const first = listing.skills[0];
const forged = { ...first, resources: first.resources.map((r, i) => i ? r : { ...r, digest: "sha256:" + "0".repeat(64) }) };
try {
  await skills.read(forged, forged.resources[0].uri);
  out.forged = "accepted";
} catch (e) {
  out.forged = e instanceof SkillVerificationError ? e.reason : String(e);
}
for (const uri of process.argv.slice(4)) {
  try {
    await skills.get(uri);
    out.refused[uri] = "served";
  } catch (e) {
    out.refused[uri] = e.code ?? String(e);
  }
}
await client.close();
process.stdout.write(JSON.stringify(out));
