import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { versionOf } from "../db/write";
import { toBase64Url } from "../lib/crypto";

/**
 * ETag, If-Match and If-None-Match (RFC 9110 sections 8.8.3, 13.1.1 and 13.1.2). Versioned resources answer
 * `ETag: "<version>"`, and a write sent with `If-Match` is refused with 412 unless the resource is still at one of the
 * named versions. Every single-resource read (platform/route.ts `defineRoute` attaches `conditionalRead`) answers an
 * ETag, a hash of the answer where the resource has no version, and 304 to an If-None-Match that names it.
 */
export const etagOf = (version: number): string => `"${version}"`;

/**
 * The versions an If-Match header allows: `*`, a list, or an empty list when it names none we issued (a weak tag or
 * garbage never matches, as strong comparison requires), so a malformed precondition fails closed. A tag with a
 * facet (`"3.ab"`, `withEtag`) allows its version.
 */
export function parseIfMatch(header: string | undefined): "*" | number[] | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === "*") return "*";
  const versions: number[] = [];
  for (const [, weak, tag] of header.matchAll(/(W\/)?"([^"]*)"/g)) {
    const version = /^(0|[1-9]\d{0,14})(?:\.[0-9a-z]+)?$/.exec(tag!)?.[1];
    if (!weak && version !== undefined) versions.push(Number(version));
  }
  return versions;
}

/**
 * Sets the ETag of a verb's versioned answer (db/write.ts `versioned`) and returns the answer. `facet` names what the
 * answer shows beside its version (a user's pending invitation, a webhook's failure run: state that moves no
 * version), `"<version>.<facet>"`, so an If-None-Match sees it change; If-Match still compares the version alone.
 */
export function withEtag<T extends object>(c: Context, value: T, facet?: string): T {
  const version = versionOf(value);
  if (version !== undefined) c.header("ETag", facet ? `"${version}.${facet}"` : etagOf(version));
  return value;
}

/** A facet of an instant the answer shows beside its version (`withEtag`): null when there is none. */
export const instantFacet = (prefix: string, at: string | null): string | undefined =>
  at === null ? undefined : `${prefix}${Date.parse(at).toString(36)}`;

/**
 * Whether If-None-Match names `etag`, by weak comparison (RFC 9110 section 13.1.2: `W/` is ignored on both sides);
 * `*` names any current representation.
 */
function noneMatchNames(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === "*") return true;
  const opaque = etag.replace(/^W\//, "");
  for (const [tag] of header.matchAll(/"[^"]*"/g)) if (tag === opaque) return true;
  return false;
}

/** A strong validator of a body: 128 bits of its SHA-256, base64url (identical bytes, identical tag). */
const hashTag = async (body: ArrayBuffer) => `"${toBase64Url(new Uint8Array(await crypto.subtle.digest("SHA-256", body)).slice(0, 16))}"`;

/**
 * A single-resource read, after its handler: a 200 keeps the version ETag its route set (`withEtag`) or gets a hash of
 * its bytes, and becomes a 304 with that ETag and no body when If-None-Match names it. A read with `include` embeds
 * records that change on their own, which a version does not cover: it never answers 304 on a version tag.
 */
export const conditionalRead = createMiddleware(async (c, next) => {
  await next();
  if (c.res.status !== 200) return;
  let etag = c.res.headers.get("etag");
  const versionTag = etag !== null;
  if (etag === null) {
    etag = await hashTag(await c.res.clone().arrayBuffer());
    c.res.headers.set("ETag", etag);
  }
  if (versionTag && c.req.queries("include")) return;
  if (!noneMatchNames(c.req.header("if-none-match"), etag)) return;
  // Hono carries the 200's headers over (ETag, caching, cookies) but its content type; no length for no body.
  c.res = new Response(null, { status: 304 });
  c.res.headers.delete("content-length");
});

/** The ETag header as an OpenAPI response header declaration. */
export const ETAG_HEADER = {
  ETag: {
    description:
      "The resource's version; send it back in If-Match to make a write conditional, or in If-None-Match on a read (304 when unchanged)",
    schema: { type: "string" as const, example: '"3"' },
  },
};

/** The ETag of a read of a resource without a version: a hash of the answer's bytes. */
export const HASH_ETAG_HEADER = {
  ETag: {
    description: "A hash of this answer's bytes; send it back in If-None-Match to be answered 304 while the answer is unchanged",
    schema: { type: "string" as const, example: '"q3Jd8H0mQ2uR1xZkT5wYvA"' },
  },
};
