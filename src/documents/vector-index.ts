import { and, asc, eq, gt, gte, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { documentVectors } from "../db/schema";
import { type Env, readConfig } from "../env";
import { nowIso } from "../lib/time";

/**
 * Where document chunk vectors live: Vectorize `DOCUMENT_VECTORS` in production, one namespace
 * per organization; a D1 table searched by cosine similarity in development and tests (Vectorize has no local mode).
 * Every call names the organization, and nothing is read or written outside it.
 */
export interface ChunkVector {
  documentId: string;
  chunk: number;
  values: number[];
}

export interface ChunkMatch {
  documentId: string;
  /** Cosine similarity of the chunk and the query, as the index reports it (−1 to 1). */
  score: number;
}

export interface DocumentVectorIndex {
  readonly kind: "vectorize" | "d1";
  /** Makes `vectors` the document's whole entry: its chunks are upserted by id and any chunk past them is removed. */
  putDocument(organizationId: string, documentId: string, vectors: ChunkVector[]): Promise<void>;
  removeDocuments(organizationId: string, documentIds: string[]): Promise<void>;
  /** The chunks most similar to `vector`, best first, at most `topK`. */
  query(organizationId: string, vector: number[], topK: number): Promise<ChunkMatch[]>;
}

/** Chunks a document may have: its vector ids are `documentId#0` … `documentId#63`. */
export const MAX_CHUNKS = 64;
/** Vectorize's topK ceiling when neither values nor metadata are returned (the id names the document). */
export const VECTORIZE_MAX_TOP_K = 100;
/** D1 index: rows read per round trip, and the most chunks one search scans (development sizes, bounded). */
const D1_PAGE = 2_500;
export const D1_MAX_SCANNED = 50_000;

export const vectorId = (documentId: string, chunk: number) => `${documentId}#${chunk}`;
const documentOf = (id: string) => id.slice(0, id.lastIndexOf("#"));
const chunkIds = (documentId: string, from: number) =>
  Array.from({ length: Math.max(0, MAX_CHUNKS - from) }, (_, i) => vectorId(documentId, from + i));

/** The deployment's index: Vectorize when bound outside development and tests (its local binding only throws), else D1. */
export function documentVectorIndex(env: Env, db: Db): DocumentVectorIndex {
  const { ENVIRONMENT } = readConfig(env);
  return env.DOCUMENT_VECTORS && (ENVIRONMENT === "production" || ENVIRONMENT === "staging")
    ? vectorizeIndex(env.DOCUMENT_VECTORS)
    : d1VectorIndex(db);
}

/** Vectorize (cosine metric): the organization id is the namespace, so a query cannot reach another organization. */
export function vectorizeIndex(index: VectorizeIndex): DocumentVectorIndex {
  return {
    kind: "vectorize",
    async putDocument(organizationId, documentId, vectors) {
      if (vectors.length) {
        await index.upsert(
          vectors.map((v) => ({
            id: vectorId(v.documentId, v.chunk),
            values: v.values,
            namespace: organizationId,
            metadata: { documentId: v.documentId, chunk: v.chunk },
          })),
        );
      }
      const stale = chunkIds(documentId, vectors.length);
      if (stale.length) await index.deleteByIds(stale);
    },
    async removeDocuments(_organizationId, documentIds) {
      const ids = documentIds.flatMap((id) => chunkIds(id, 0));
      // deleteByIds takes at most 1,000 ids a call.
      for (let i = 0; i < ids.length; i += 1000) await index.deleteByIds(ids.slice(i, i + 1000));
    },
    async query(organizationId, vector, topK) {
      const res = await index.query(vector, {
        topK: Math.min(topK, VECTORIZE_MAX_TOP_K),
        namespace: organizationId,
        returnMetadata: "none",
        returnValues: false,
      });
      return res.matches.map((m) => ({ documentId: documentOf(m.id), score: m.score }));
    },
  };
}

const HEX_VALUE = new Uint8Array(128);
for (let i = 0; i < 16; i++) HEX_VALUE["0123456789ABCDEF".charCodeAt(i)] = i;
/** SQLite's hex() of float32 bytes (upper case), back to the vector. */
function float32FromHex(hex: string): Float32Array {
  const bytes = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (HEX_VALUE[hex.charCodeAt(2 * i)]! << 4) | HEX_VALUE[hex.charCodeAt(2 * i + 1)]!;
  return new Float32Array(bytes.buffer, 0, bytes.length >> 2);
}

function normalized(values: number[]): Float32Array {
  // A loop, not Math.hypot(...values): spreading a long vector into arguments overflows the stack.
  let sum = 0;
  for (const x of values) sum += x * x;
  const norm = Math.sqrt(sum) || 1;
  return Float32Array.from(values, (x) => x / norm);
}

/**
 * D1: chunk vectors in `document_vectors`, scanned page by page in id order over the organization's rows only, with
 * the cosine (a dot product of normalized vectors) computed here. A vector of another dimension (an older model) is
 * skipped. Linear in the organization's chunks and capped at D1_MAX_SCANNED: fine for development, not production.
 */
export function d1VectorIndex(db: Db): DocumentVectorIndex {
  const t = documentVectors;
  return {
    kind: "d1",
    async putDocument(organizationId, documentId, vectors) {
      const at = nowIso();
      const upserts = vectors.map((v) =>
        db
          .insert(t)
          .values({
            organizationId,
            id: vectorId(documentId, v.chunk),
            documentId,
            chunk: v.chunk,
            vector: normalized(v.values),
            indexedAt: at,
          })
          .onConflictDoUpdate({ target: [t.organizationId, t.id], set: { vector: normalized(v.values), indexedAt: at } }),
      );
      const stale = db
        .delete(t)
        .where(and(eq(t.organizationId, organizationId), eq(t.documentId, documentId), gte(t.chunk, vectors.length)));
      await db.batch([stale, ...upserts]);
    },
    async removeDocuments(organizationId, documentIds) {
      if (documentIds.length) await db.delete(t).where(and(eq(t.organizationId, organizationId), inArray(t.documentId, documentIds)));
    },
    async query(organizationId, vector, topK) {
      const q = normalized(vector);
      // The best chunk of each document seen: a long document's chunks cannot crowd the others out of topK.
      const best = new Map<string, number>();
      let after = "";
      for (let scanned = 0; scanned < D1_MAX_SCANNED; ) {
        const rows = await db
          // hex(): D1 hands a BLOB over as an array of byte numbers, several times slower to receive than its hex text.
          .select({ id: t.id, documentId: t.documentId, hex: sql<string>`hex(${t.vector})` })
          .from(t)
          .where(and(eq(t.organizationId, organizationId), gt(t.id, after)))
          .orderBy(asc(t.id))
          .limit(Math.min(D1_PAGE, D1_MAX_SCANNED - scanned));
        for (const r of rows) {
          const v = float32FromHex(r.hex);
          if (v.length !== q.length) continue;
          let dot = 0;
          for (let i = 0; i < q.length; i++) dot += q[i]! * v[i]!;
          if (dot > (best.get(r.documentId) ?? -Infinity)) best.set(r.documentId, dot);
        }
        scanned += rows.length;
        if (rows.length < D1_PAGE) break;
        after = rows[rows.length - 1]!.id;
      }
      return [...best]
        .map(([documentId, score]) => ({ documentId, score }))
        .sort((a, b) => b.score - a.score)
        .slice(0, topK);
    },
  };
}
