import { z } from "@hono/zod-openapi";
import type { FieldIssue } from "./errors";

/**
 * Bounds on JSON a client sends (docs/decisions/0026-bounded-input.md). Every stored value must be one that can be read
 * back, serialised into an event and sent: nesting is capped (JSON.stringify recurses, and a value nested thousands
 * deep overflows the stack when it is written out later), and every string must be well-formed Unicode, since a
 * lone surrogate cannot be stored as UTF-8 and would come back as replacement characters, longer than it was checked;
 * NUL is refused too. Lengths (zod's `max`) count code points, as SQLite's length() does, so a limit holds as stored.
 */
export const MAX_JSON_DEPTH = 32;
/** At most this many problems are listed for one body; a body with more is refused all the same. */
const MAX_REPORTED = 50;

type Path = (string | number)[];

/**
 * The depth and Unicode problems of a parsed JSON value, found without recursion (so no input can overflow the
 * stack here). `prefix` is the path of `value` within the request.
 */
export function jsonIssues(value: unknown, { maxDepth = MAX_JSON_DEPTH, prefix = [] as Path } = {}): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const report = (path: Path, code: string, message: string) => {
    if (issues.length < MAX_REPORTED) issues.push({ field: path.join("."), path, code, message });
  };
  const stack: [unknown, Path, number][] = [[value, prefix, 0]];
  while (stack.length > 0 && issues.length < MAX_REPORTED) {
    const [v, path, depth] = stack.pop()!;
    if (typeof v === "string") {
      if (!v.isWellFormed())
        report(path, "invalid_unicode", "Must be well-formed Unicode text (a lone UTF-16 surrogate is not a character)");
      // NUL ends a string in many tools that read the database or its exports; no field needs it.
      else if (v.includes("\u0000")) report(path, "invalid_character", "Must not contain the NUL character (U+0000)");
      continue;
    }
    if (v === null || typeof v !== "object") continue;
    if (depth >= maxDepth) {
      report(path, "too_deep", `Nested more than ${maxDepth} levels deep`);
      continue;
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], [...path, i], depth + 1]);
      continue;
    }
    for (const [key, child] of Object.entries(v)) {
      if (!key.isWellFormed()) report([...path, key], "invalid_unicode", "Field names must be well-formed Unicode text");
      else if (key.includes("\u0000"))
        report([...path, key], "invalid_character", "Field names must not contain the NUL character (U+0000)");
      stack.push([child, [...path, key], depth + 1]);
    }
  }
  return issues;
}

/** Whether `value` nests deeper than `maxDepth` (iterative, stops at the first level past it). */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth >= maxDepth) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * A free-form JSON object (activity metadata and the like), bounded by its serialised size and by depth. The size is
 * measured only once the depth is known to be safe to serialise.
 */
export const boundedJsonObject = ({ maxChars, maxDepth = 8 }: { maxChars: number; maxDepth?: number }) =>
  z
    .record(z.string().max(200), z.unknown())
    .superRefine((value, ctx) => {
      if (nestsDeeperThan(value, maxDepth))
        ctx.addIssue({ code: "custom", message: `Nested more than ${maxDepth} levels deep`, params: { code: "too_deep" } });
      else if (JSON.stringify(value).length > maxChars)
        ctx.addIssue({ code: "custom", message: `Larger than ${maxChars} characters as JSON`, params: { code: "too_big" } });
    })
    .openapi({ description: `Any JSON object, at most ${maxChars} characters as JSON and ${maxDepth} levels deep` });
