import { and, eq } from "drizzle-orm";
import { configuredGateway } from "../ai/gateway";
import { documents } from "../db/schema";
import type { EventConsumer } from "../events/consumers";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { FORMS, type LeaseCanonical } from "./forms";
import { documentVectorIndex, MAX_CHUNKS, VECTORIZE_MAX_TOP_K } from "./vector-index";
import { createLogger } from "../lib/log";

/**
 * Semantic search over an organization's documents (spec: Search hit, Rules 4 and 5). The DOCUMENT_GENERATED
 * consumer embeds each document's text rendering, chunked, into the vector index (documents/vector-index.ts); the
 * search verb embeds the query and asks the index, within the caller's organization only.
 */

/** Characters of a chunk, and how much consecutive chunks overlap (a phrase cut at a boundary is whole in one). */
export const CHUNK_CHARS = 2_000;
const CHUNK_OVERLAP = 200;
/** Spec: Limits does not name one; a query is a phrase, not a document. */
export const MAX_QUERY_CHARS = 500;
export const MAX_HITS = 20;

const money = (cents: number) => `$${(cents / 100).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
const date = (d: { year: number; month: number; day: number }) =>
  `${d.year}-${String(d.month).padStart(2, "0")}-${String(d.day).padStart(2, "0")}`;
const people = (list: { name: string; email: string }[]) => list.map((p) => `${p.name} <${p.email}>`).join("; ");

/** Every string inside a value, for a form without its own rendering. */
const strings = (v: unknown): string[] =>
  typeof v === "string" ? [v] : v && typeof v === "object" ? Object.values(v).flatMap(strings) : [];

/** The plain text a document is searched by: form title, parties, address, dates and amounts from its canonical data. */
export function renderDocumentText(formKey: string, canonical: Record<string, unknown>): string {
  const title = FORMS[formKey]?.title ?? formKey;
  if (formKey === "on/standard-lease") {
    const { lease } = canonical as LeaseCanonical;
    const a = lease.property.address;
    return [
      title,
      `Landlords: ${people(lease.landlords)}`,
      `Tenants: ${people(lease.tenants)}`,
      `Rental unit: ${a.street}, ${a.city}, ${a.province}`,
      `Term: begins ${date(lease.term.commencement)}${lease.term.end ? `, ends ${date(lease.term.end)}` : ", month to month"}`,
      `Monthly rent: ${money(lease.monthlyRent.cents)}`,
      ...(lease.deposit
        ? [`Rent deposit: ${money(lease.deposit.cents)}${lease.deposit.dueDate ? `, due ${date(lease.deposit.dueDate)}` : ""}`]
        : []),
    ].join("\n");
  }
  if (formKey === "generic/free-form") return `${String(canonical.title ?? "")}\n\n${String(canonical.body ?? "")}`;
  return [title, ...strings(canonical)].join("\n");
}

/** Pieces of at most CHUNK_CHARS, cut at whitespace where one is near, at most MAX_CHUNKS (the rest is not indexed). */
export function chunkText(text: string): string[] {
  const chunks: string[] = [];
  let start = 0;
  while (start < text.length && chunks.length < MAX_CHUNKS) {
    let end = Math.min(text.length, start + CHUNK_CHARS);
    if (end < text.length) {
      const space = text.lastIndexOf(" ", end);
      if (space > start + CHUNK_CHARS / 2) end = space;
    }
    chunks.push(text.slice(start, end).trim());
    if (end >= text.length) break;
    start = Math.max(end - CHUNK_OVERLAP, start + 1);
  }
  return chunks.filter((c) => c.length > 0);
}

/**
 * Indexes the documents DOCUMENT_GENERATED names. Vector ids are `documentId#chunk`, so handling an event again
 * overwrites the same vectors. A document no longer there (or not of the event's organization) is removed from the
 * index instead. Without an AI gateway nothing is indexed; that is logged, not retried (search then answers []).
 */
export const documentIndexingConsumer: EventConsumer = {
  name: "document-indexing",
  accepts: (type) => type === "DOCUMENT_GENERATED",
  async handle(events, { env, db }) {
    const gateway = configuredGateway(env);
    if (!gateway) {
      createLogger().info("document indexing skipped: no AI gateway configured", { eventIds: events.map((e) => e.id) });
      return;
    }
    const wanted = new Map(events.map((e) => [String((e.data as { documentId?: unknown }).documentId ?? ""), e.organizationId]));
    const found = await db
      .select({ id: documents.id, organizationId: documents.organizationId, formKey: documents.formKey, canonical: documents.canonical })
      .from(documents)
      .where(inJsonList(documents.id, [...wanted.keys()]));
    const docs = found.filter((d) => wanted.get(d.id) === d.organizationId);
    const chunks = docs.map((d) => chunkText(renderDocumentText(d.formKey, d.canonical)));
    // One embeddings call for the whole batch (the client splits it into requests of EMBED_BATCH texts).
    const vectors = await gateway.embed(chunks.flat());
    const index = documentVectorIndex(env, db);
    let next = 0;
    for (const [i, doc] of docs.entries()) {
      await index.putDocument(
        doc.organizationId,
        doc.id,
        chunks[i]!.map((_, chunk) => ({ documentId: doc.id, chunk, values: vectors[next++]! })),
      );
    }
    for (const [documentId, organizationId] of wanted) {
      if (documentId && !docs.some((d) => d.id === documentId)) await index.removeDocuments(organizationId, [documentId]);
    }
  },
};

export interface SearchHit {
  documentId: string;
  score: number;
}

/**
 * GET /api/documents/search (spec rule 4): no query or no gateway → no hits and no gateway call. Else one embedding,
 * one index query in the caller's organization, one hit per document (its best chunk), cosine clamped to [0, 1].
 */
export async function searchDocuments(ctx: ServiceContext, q: string | undefined): Promise<SearchHit[]> {
  const text = (q ?? "").trim();
  if (!text) return [];
  const gateway = configuredGateway(ctx.env);
  if (!gateway) return [];
  const [vector] = await gateway.embed([text]);
  const matches = await documentVectorIndex(ctx.env, ctx.db).query(ctx.organizationId, vector!, VECTORIZE_MAX_TOP_K);
  const best = new Map<string, number>();
  for (const m of matches) if (m.score > (best.get(m.documentId) ?? -Infinity)) best.set(m.documentId, m.score);
  const ranked = [...best].sort((a, b) => b[1] - a[1]).slice(0, MAX_HITS);
  if (ranked.length === 0) return [];
  // Only documents that exist in the caller's organization: an index may lag a removal (Vectorize applies writes
  // asynchronously), and this is the tenancy check of whatever the index answered.
  const live = await ctx.db
    .select({ id: documents.id })
    .from(documents)
    .where(
      and(
        eq(documents.organizationId, ctx.organizationId),
        inJsonList(
          documents.id,
          ranked.map(([id]) => id),
        ),
      ),
    );
  const ids = new Set(live.map((r) => r.id));
  // A document sharing nothing with the query (score 0 or below) is no hit.
  return ranked.filter(([id, score]) => ids.has(id) && score > 0).map(([documentId, score]) => ({ documentId, score: Math.min(1, score) }));
}
