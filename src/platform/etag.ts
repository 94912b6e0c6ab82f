import type { Context } from "hono";
import { versionOf } from "../db/write";

/**
 * ETag and If-Match (RFC 9110 sections 8.8.3 and 13.1.1) over row versions: reads answer `ETag: "<version>"`, and a
 * write sent with `If-Match` is refused with 412 unless the resource is still at one of the named versions.
 */
export const etagOf = (version: number): string => `"${version}"`;

/**
 * The versions an If-Match header allows: `*`, a list, or an empty list when it names none we issued (a weak tag or
 * garbage never matches, as strong comparison requires), so a malformed precondition fails closed.
 */
export function parseIfMatch(header: string | undefined): "*" | number[] | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === "*") return "*";
  const versions: number[] = [];
  for (const [, weak, tag] of header.matchAll(/(W\/)?"([^"]*)"/g)) if (!weak && /^(0|[1-9]\d{0,14})$/.test(tag!)) versions.push(Number(tag));
  return versions;
}

/** Sets the ETag of a verb's versioned answer (db/write.ts `versioned`) and returns the answer. */
export function withEtag<T extends object>(c: Context, value: T): T {
  const version = versionOf(value);
  if (version !== undefined) c.header("ETag", etagOf(version));
  return value;
}

/** The ETag header as an OpenAPI response header declaration. */
export const ETAG_HEADER = { ETag: { description: "The resource's version; send it back in If-Match to make a write conditional", schema: { type: "string" as const, example: '"3"' } } };
