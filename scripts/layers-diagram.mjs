// The README's layer diagram (section "Layout"), drawn from the code's own imports: dependency-cruiser reads src/
// with the repository's configuration, each file is put in its tier (.dependency-cruiser.cjs), and every import
// from one tier into another becomes an arrow (unlabelled: the diagram changes when the tiers do, not with every
// import). A mermaid flowchart, between two markers.
//   npm run layers:diagram            rewrites the diagram in README.md
//   node scripts/layers-diagram.mjs --check   exits 1 when README.md's diagram is not the one the code draws
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { cruise } from "dependency-cruiser";

const root = fileURLToPath(new URL("..", import.meta.url));
const README = `${root}README.md`;
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

function withDiagram(readme, diagram) {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md has no ${START} … ${END} block`);
  return `${readme.slice(0, start + START.length)}\n${diagram}\n${readme.slice(end)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const readme = readFileSync(README, "utf8");
  const next = withDiagram(readme, await layersDiagram());
  if (process.argv.includes("--check")) {
    if (next !== readme) {
      console.error("README.md's layer diagram is not the one the code draws: run npm run layers:diagram");
      process.exit(1);
    }
  } else writeFileSync(README, next);
}
