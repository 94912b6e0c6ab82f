// The layering rule (docs/architecture.md "Layers", STYLE.md "Layers"): imports point down. A file imports from its own folder,
// from lower tiers and from lib/. Checked by test/node/layers.test.ts, so a violation fails `npm test`.
// Every import counts, type-only ones too (the swc parser sees `import type` like any other): a circle held together
// by types is still a circle a reader has to untangle.

/** Tiers, bottom up. A path pattern per tier; a file in tier N may import tiers 1..N only. */
const DOMAINS = [
  "admin",
  "api-keys",
  "brief",
  "clickwrap",
  "communications",
  "contacts",
  "custom-fields",
  "deals",
  "documents",
  "erasure",
  "exports",
  "imports",
  "intake",
  "integrations",
  "leads",
  "merge",
  "oauth",
  "organization",
  "plants",
  "profiles",
  "properties",
  "referrals",
  "signatures",
  "surveys",
  "templates",
  "tasks",
  "appointments",
  "action-plans",
  "smart-lists",
  "ponds",
  "testimonials",
  "trash",
  "users",
  "webhooks",
];
const TIERS = [
  { name: "1 lib/, env.ts", path: ["^src/lib/", "^src/env\\.ts$"] },
  { name: "2 db/, seal/, ai/", path: ["^src/db/", "^src/seal/", "^src/ai/"] },
  { name: "3 service-context.ts, mail/", path: ["^src/service-context\\.ts$", "^src/mail/"] },
  { name: "4 shards/", path: ["^src/shards/"] },
  { name: "5 events/, platform/", path: ["^src/events/", "^src/platform/"] },
  { name: "6 crm/, files/, reputation/", path: ["^src/crm/", "^src/files/", "^src/reputation/"] },
  { name: "7 the domains", path: [`^src/(${DOMAINS.join("|")})/`] },
  { name: "8 mcp/, queues.ts, cron.ts, app.ts, index.ts", path: ["^src/mcp/", "^src/(queues|cron|app|index)\\.ts$"] },
];

const upward = TIERS.slice(0, -1).map((tier, i) => ({
  name: `tier-${tier.name.split(" ")[0]}-imports-up`,
  comment: `A file in tier "${tier.name}" imports a higher tier. Pass the thing down (a function, a port, plain data) instead.`,
  severity: "error",
  from: { path: tier.path },
  to: { path: TIERS.slice(i + 1).flatMap((t) => t.path) },
}));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "Files import each other, directly or through others. Move what both need below them.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    ...upward,
    {
      name: "domain-internals",
      comment:
        "A domain reaches into another domain's internals. Use its service.ts or schemas.ts, or move the shared piece below the domains.",
      severity: "error",
      from: { path: `^src/(${DOMAINS.join("|")})/` },
      to: {
        path: `^src/(${DOMAINS.join("|")})/`,
        pathNot: ["^src/$1/", "^src/[^/]+/(service|schemas)\\.ts$"],
      },
    },
    {
      name: "untiered",
      comment:
        "A file under src/ belongs to no tier: add its folder to TIERS in .dependency-cruiser.cjs (and the tiers in docs/architecture.md).",
      severity: "error",
      from: { path: "^src/", pathNot: [...TIERS.flatMap((t) => t.path), "^src/client/"] },
      to: {},
    },
    {
      name: "durable-object-class",
      comment:
        "A Durable Object is reached through the typed client beside its class (signatures/signer-client.ts, platform/rate-limiter.ts); only index.ts exports the class.",
      severity: "error",
      from: { pathNot: ["^src/index\\.ts$", "^src/signatures/signer-client\\.ts$", "^src/platform/rate-limiter\\.ts$"] },
      to: { path: ["^src/signatures/envelope-signer\\.ts$", "^src/platform/rate-limiter-object\\.ts$"] },
    },
    {
      name: "worker-imports-client",
      comment: "src/client/ is the generated typed client for callers of the API, not part of the Worker.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/client/" },
      to: { path: "^src/client/" },
    },
  ],
  options: {
    // TypeScript 7 ships no compiler API for dependency-cruiser to parse with; swc parses the sources instead.
    parser: "swc",
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^src/client/schema\\.d\\.ts$" },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".d.ts", ".json"] },
    reporterOptions: {
      archi: {
        collapsePattern: `^src/(lib|db|seal|ai|mail|shards|events|platform|crm|files|reputation|mcp|${DOMAINS.join("|")})/`,
      },
    },
  },
};
// Not part of dependency-cruiser's schema: read by the diagram script (scripts/layers-diagram.mjs).
Object.defineProperty(module.exports, "tiers", { value: TIERS, enumerable: false });
