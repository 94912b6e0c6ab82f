import { toHex } from "./crypto";

export const newId = (): string => crypto.randomUUID();

/** A UUID-shaped SHA-256 of `parts`: the same parts name the same record, so a repeated derivation (a re-run import) finds it. */
export async function derivedId(...parts: string[]): Promise<string> {
  const h = toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(parts)))));
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * A version-7 UUID (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. For the records a book is made of
 * (contacts, deals, properties): each id lands at the end of every index keyed by it — the table's own, the search
 * index's record column, tags — where a random one lands anywhere, and an import of 100,000 rows rewrote pages all
 * over those indexes (bench/imports.bench.test.ts: commits grew from 90 to 350 ms a chunk over 20,000 rows). The id says when
 * the record was made, which `createdAt` already shows; it is no secret (nothing is found by its id alone).
 */
export function newRecordId(now = Date.now()): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  const high = Math.floor(now / 2 ** 32);
  const low = now >>> 0;
  b[0] = (high >>> 8) & 0xff;
  b[1] = high & 0xff;
  b[2] = low >>> 24;
  b[3] = (low >>> 16) & 0xff;
  b[4] = (low >>> 8) & 0xff;
  b[5] = low & 0xff;
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = toHex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
