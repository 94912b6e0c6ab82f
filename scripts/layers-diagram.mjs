// The layer diagram of docs/architecture.md (section "Layers"), drawn from the code's own imports: dependency-cruiser reads src/
// with the repository's configuration, each file is put in its tier (.dependency-cruiser.cjs), and every import
// from one tier into another becomes an arrow (unlabelled: the diagram changes when the tiers do, not with every
// import). A mermaid flowchart, between two markers.
//   npm run layers:diagram            rewrites the diagram in docs/architecture.md
//   node scripts/layers-diagram.mjs --check   exits 1 when that diagram is not the one the code draws
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { cruise } from "dependency-cruiser";

const root = fileURLToPath(new URL("..", import.meta.url));
const DOC = `${root}docs/architecture.md`;
const START = "<!-- layers-diagram:start (npm run layers:diagram) -->";
const END = "<!-- layers-diagram:end -->";

export async function layersDiagram() {
  const config = createRequire(import.meta.url)(`${root}.dependency-cruiser.cjs`);
  const cwd = process.cwd();
  process.chdir(root);
  let result;
  try {
    result = await cruise(["src"], { ...config.options, outputType: "json" });
  } finally {
    process.chdir(cwd);
  }
  const { modules } = typeof result.output === "string" ? JSON.parse(result.output) : result.output;
  const tierOf = (path) => config.tiers.findIndex((t) => t.path.some((p) => new RegExp(p).test(path)));
  const edges = new Map();
  for (const m of modules) {
    const from = tierOf(m.source);
    if (from < 0) continue;
    for (const d of m.dependencies) {
      const to = tierOf(d.resolved);
      if (to < 0 || to === from) continue;
      const key = `${from}>${to}`;
      edges.set(key, (edges.get(key) ?? 0) + 1);
    }
  }
  const lines = ["```mermaid", "flowchart TB"];
  config.tiers.forEach((t, i) => {
    lines.push(`  T${i}["${t.name}"]`);
  });
  // Top tier first, so arrows (importer → imported) run down the page.
  for (const [key] of [...edges].sort(([a], [b]) => b.localeCompare(a, "en", { numeric: true }))) {
    const [from, to] = key.split(">");
    lines.push(`  T${from} --> T${to}`);
  }
  lines.push("```");
  return lines.join("\n");
}

function withDiagram(doc, diagram) {
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/architecture.md has no ${START} … ${END} block`);
  return `${doc.slice(0, start + START.length)}\n${diagram}\n${doc.slice(end)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const doc = readFileSync(DOC, "utf8");
  const next = withDiagram(doc, await layersDiagram());
  if (process.argv.includes("--check")) {
    if (next !== doc) {
      console.error("docs/architecture.md's layer diagram is not the one the code draws: run npm run layers:diagram");
      process.exit(1);
    }
  } else writeFileSync(DOC, next);
}
