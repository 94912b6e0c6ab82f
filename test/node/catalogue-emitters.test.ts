// Issue 32: every event of the webhook catalogue has code that emits it. A name a subscription may ask for that no
// code path emits is an event an integrator waits for forever.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { CATALOGUE } from "../../src/webhooks/catalogue";

const root = process.cwd();

/** Every TypeScript source of the Worker, by path relative to the repository. */
function sources(dir = join(root, "src")): Map<string, string> {
  const out = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) for (const [p, text] of sources(path)) out.set(p, text);
    else if (entry.name.endsWith(".ts")) out.set(relative(root, path), readFileSync(path, "utf8"));
  }
  return out;
}

/** The calls that make an event (events/outbox.ts, events/resource-event.ts, signatures/present.ts). */
const MAKES_EVENTS = /\b(newEvent|resourceEvent|envelopeEvent)\s*\(/;
/** Where event names are listed rather than emitted: the catalogue itself, and the client generated from the OpenAPI document. */
const NOT_EMITTERS = (path: string) => path === join("src", "webhooks", "catalogue.ts") || path.startsWith(`${join("src", "client")}/`);

/**
 * The event names `files` emit: a name counts when it is a whole string literal, outside a type union, in a file that
 * makes events (so an example in a schema, a name in a description or a type that lists names does not).
 */
function emittedNames(files: Map<string, string>): Set<string> {
  const names = new Set<string>();
  for (const [path, text] of files) {
    if (NOT_EMITTERS(path) || !MAKES_EVENTS.test(text)) continue;
    for (const m of text.matchAll(/(?<!\|\s*)(["'`])([a-z][a-z_]*\.[a-z_]+)\1(?!\s*\|)/g)) names.add(m[2]!);
  }
  return names;
}

/** The names of `catalogue` no source emits. */
function notEmitted(catalogue: readonly string[], files: Map<string, string>): string[] {
  const emitted = emittedNames(files);
  return catalogue.filter((name) => !emitted.has(name));
}

describe("the webhook catalogue is emitted", () => {
  it("every event name of CATALOGUE is emitted by some code path", () => {
    expect(notEmitted(CATALOGUE, sources())).toEqual([]);
  });

  it("the check fails for a name nobody emits, and ignores names that are only mentioned or typed", () => {
    const files = new Map([
      [join("src", "webhooks", "catalogue.ts"), `export const CATALOGUE = ["thing.created", "thing.gone", "thing.pending"];`],
      [
        join("src", "things", "service.ts"),
        `type Move = { event: "thing.gone" | "thing.pending" };\ncommit(ctx, [], [newEvent(ctx, "thing.created", { object })]);`,
      ],
      [join("src", "things", "schemas.ts"), `z.enum(["thing.gone"]).openapi({ example: "thing.gone" });`],
      [join("src", "client", "schema.d.ts"), `events: "thing.gone" | "thing.pending"; newEvent(`],
      [join("src", "other", "service.ts"), `resourceEvent(ctx, "thing.pending", object)`],
    ]);
    expect(notEmitted(["thing.created", "thing.gone", "thing.pending"], files)).toEqual(["thing.gone"]);
  });
});
