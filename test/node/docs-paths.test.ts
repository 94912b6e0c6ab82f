// The documents name only what exists: every repository path a document names (a link, or a path in backticks such as
// `src/contacts/routes.ts`) is in the repository, every `npm run <script>` is a script of package.json, and every
// document under docs/ is listed in the index, docs/README.md. A rename that forgets the docs fails here.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";

const root = process.cwd();

/** Made by running things (install, dev server, CI), never committed: a path under them is not checked. */
const RUNTIME_PREFIXES = ["node_modules/", ".wrangler/", ".ci/out/", ".git/"];
/** Endings that make a slashed word a file path even when its first folder is not one of the repository's. */
const FILE_ENDINGS = /\.(ts|mts|cts|js|mjs|cjs|json|jsonc|toml|sql|md|yaml|yml|sh)$/;
/** The repository's top-level names (src, test, docs, wrangler.toml …): a slashed word starting with one is a path. */
const TOP_LEVEL = new Set(readdirSync(root).filter((name) => !RUNTIME_PREFIXES.includes(`${name}/`)));

interface Finding {
  doc: string;
  kind: "path" | "link" | "script";
  name: string;
}

/** Every markdown document the check reads: README.md and docs/**\/*.md, as paths relative to the root. */
function documents(base = root): string[] {
  const found = ["README.md"];
  const walk = (dir: string) => {
    if (!existsSync(join(base, dir))) return;
    for (const name of readdirSync(join(base, dir)).sort()) {
      const path = `${dir}/${name}`;
      if (statSync(join(base, path)).isDirectory()) walk(path);
      else if (name.endsWith(".md")) found.push(path);
    }
  };
  walk("docs");
  return found;
}

/** `{a,b}` expanded: `src/shards/{move,copy}.ts` names two files. */
function expandBraces(word: string): string[] {
  const m = /\{([^{}]*)\}/.exec(word);
  if (!m) return [word];
  return m[1]!.split(",").flatMap((part) => expandBraces(word.slice(0, m.index) + part + word.slice(m.index + m[0].length)));
}

/**
 * The repository paths a backticked span names, relative to the root. A URL path (`/v1/contacts`), a URL, a content
 * type (`text/csv`), an R2 key or a template (`properties/<org>/<id>/`) names none: only a slashed word whose first
 * folder is a top-level name of the repository, or that ends like a source file, counts.
 */
function pathsInSpan(span: string, topLevel: Set<string> = TOP_LEVEL): string[] {
  const word = span.trim().replace(/:\d+(:\d+)?$/, "");
  const bare = word.replace(/\{[\w.,-]*\}/g, "x");
  if (!word.includes("/") || /[\s<>$…"'=(),;|{}]/.test(bare) || word.startsWith("/") || /^[a-z][a-z+.-]*:/i.test(word)) return [];
  if (word.startsWith("@") || word.startsWith("../")) return [];
  return expandBraces(word)
    .map((w) => w.replace(/^\.\//, ""))
    .filter((w) => topLevel.has(w.split("/")[0]!) || FILE_ENDINGS.test(w.replace(/\/$/, "")))
    .filter((w) => !RUNTIME_PREFIXES.some((p) => w.startsWith(p)));
}

/** Does `path` (relative to `base`, `*` matching within one folder's names) exist? */
function exists(path: string, base = root): boolean {
  if (!path.includes("*")) return existsSync(join(base, path));
  const parts = path.replace(/\/$/, "").split("/");
  const match = (dir: string, i: number): boolean => {
    if (i === parts.length) return true;
    const part = parts[i]!;
    if (!part.includes("*")) return existsSync(join(dir, part)) && match(join(dir, part), i + 1);
    if (!existsSync(dir) || !statSync(dir).isDirectory()) return false;
    const re = new RegExp(`^${part.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replaceAll("*", "[^/]*")}$`);
    return readdirSync(dir).some((name) => re.test(name) && match(join(dir, name), i + 1));
  };
  return match(base, 0);
}

/** Markdown without its fenced code blocks (their text is code, not names of files), and the blocks' text alone. */
function splitFences(text: string): { prose: string; code: string } {
  const prose: string[] = [];
  const code: string[] = [];
  let inFence = false;
  for (const line of text.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    else (inFence ? code : prose).push(line);
  }
  return { prose: prose.join("\n"), code: code.join("\n") };
}

/** The targets of the markdown links of `prose` that point into the repository, resolved from `doc`'s folder. */
function linkTargets(doc: string, prose: string): string[] {
  const targets: string[] = [];
  for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1]!.replace(/[#?].*$/, "");
    if (target === "" || /^[a-z][a-z+.-]*:/i.test(m[1]!)) continue;
    const absolute = target.startsWith("/") ? join(root, target) : resolve(root, dirname(doc), target);
    const inRepo = relative(root, absolute);
    if (inRepo.startsWith("..")) continue; // outside the repository (../shared/DESIGN.md beside it)
    targets.push(inRepo.split(sep).join("/") || ".");
  }
  return targets;
}

/** The scripts `npm run` is asked for in `text` (prose and code alike). */
function scriptsNamed(text: string): string[] {
  return [...text.matchAll(/\bnpm run(?:\s+(?:--silent|-s))?\s+([a-z][\w:.-]*)/g)].map((m) => m[1]!.replace(/[.:]+$/, ""));
}

/** Everything `doc` (its text given) names that does not exist. */
function check(doc: string, text: string, scripts: Set<string>, base = root): Finding[] {
  const { prose, code } = splitFences(text);
  const findings: Finding[] = [];
  const seen = new Set<string>();
  const add = (f: Finding) => {
    const key = `${f.kind}:${f.name}`;
    if (!seen.has(key)) findings.push(f), seen.add(key);
  };
  for (const m of prose.matchAll(/`([^`\n]+)`/g))
    for (const path of pathsInSpan(m[1]!)) if (!exists(path, base)) add({ doc, kind: "path", name: path });
  for (const target of linkTargets(doc, prose.replace(/`[^`\n]*`/g, "")))
    if (!exists(target, base)) add({ doc, kind: "link", name: target });
  for (const name of scriptsNamed(`${prose}\n${code}`)) if (!scripts.has(name)) add({ doc, kind: "script", name });
  return findings;
}

const packageScripts = () => new Set(Object.keys(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts as object));
const read = (doc: string) => readFileSync(join(root, doc), "utf8");
const show = (findings: Finding[]) => findings.map((f) => `${f.doc}: ${f.kind} ${f.name} does not exist`).join("\n");

describe("the documents name only what exists", () => {
  it("every path, link and npm script in README.md and docs/ exists", () => {
    const scripts = packageScripts();
    const findings = documents().flatMap((doc) => check(doc, read(doc), scripts));
    expect(findings, show(findings)).toEqual([]);
  });

  it("docs/README.md links every document in docs/", () => {
    const index = "docs/README.md";
    const linked = new Set(linkTargets(index, splitFences(read(index)).prose));
    const missing = documents().filter((doc) => doc.startsWith("docs/") && doc !== index && !linked.has(doc));
    expect(missing, `not linked from ${index}`).toEqual([]);
  });

  it("every page of docs/ that a comment in src/ points to exists", () => {
    const sources: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(join(root, dir))) {
        const path = `${dir}/${name}`;
        if (statSync(join(root, path)).isDirectory()) walk(path);
        else if (/\.(ts|mts|js|mjs)$/.test(name)) sources.push(path);
      }
    };
    walk("src");
    const missing = sources.flatMap((file) =>
      [...read(file).matchAll(/\bdocs\/[\w./-]+\.md\b/g)]
        .map((m) => m[0])
        .filter((doc) => !exists(doc))
        .map((doc) => `${file}: ${doc}`),
    );
    expect(missing, "pages named in src/ that do not exist").toEqual([]);
  });

  it("README.md stays an entrance: at most 250 lines", () => {
    expect(read("README.md").split("\n").length).toBeLessThanOrEqual(250);
  });

  it("the check itself fails on a path, a link or a script that does not exist, and not on a route", () => {
    const text = [
      "See `src/contacts/routes.ts`, `src/no-such-file.ts`, `test/helpers/{race-table,no-such-table}.ts` and `bench/*.bench.test.ts`.",
      "Not files: `/v1/contacts`, `GET /v1/contacts/{id}`, `text/csv`, `properties/<org>/<id>/`, `https://example.com/a.md`.",
      "Links: [ops](docs/operations.md), [gone](docs/no-such-guide.md), [anchor](#top), [web](https://example.com).",
      "Run `npm run dev`, `npm run --silent token`, then `npm run no-such-script`.",
      "```sh",
      "npm run also-missing",
      "cat src/inside-a-fence.ts",
      "```",
    ].join("\n");
    const found = check("README.md", text, new Set(["dev", "token"]), root).map((f) => `${f.kind} ${f.name}`);
    const expected = ["path src/no-such-file.ts", "path test/helpers/no-such-table.ts", "link docs/no-such-guide.md"];
    expect(found.filter((f) => !f.startsWith("script"))).toEqual(expected);
    expect(found.filter((f) => f.startsWith("script")).sort()).toEqual(["script also-missing", "script no-such-script"]);
  });
});
