import { customType, index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** A vector as little-endian float32 bytes: a quarter of its JSON text, and read back without parsing. */
const float32Vector = customType<{ data: Float32Array; driverData: ArrayBuffer | ArrayBufferView | number[] }>({
  dataType: () => "blob",
  toDriver: (v) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength).slice().buffer,
  fromDriver: (raw) => {
    // D1 hands a BLOB back as an ArrayBuffer or, in some runtimes, as an array of byte values.
    if (Array.isArray(raw)) return new Float32Array(Uint8Array.from(raw).buffer);
    if (ArrayBuffer.isView(raw)) return new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    return new Float32Array(raw);
  },
});

/**
 * The D1-backed document vector index (documents/vector-index.ts), for development and tests: Vectorize has no local
 * mode. One row per chunk of a document's text, id `documentId#chunk` (the same id Vectorize gets), stored
 * L2-normalized so cosine similarity is a dot product. Keyed by organization first: a search reads only its
 * organization's rows, in id order.
 */
export const documentVectors = sqliteTable(
  "document_vectors",
  {
    organizationId: text().notNull(),
    id: text().notNull(),
    documentId: text().notNull(),
    chunk: integer().notNull(),
    vector: float32Vector().notNull(),
    indexedAt: text().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.organizationId, t.id] }),
    index("document_vectors_document_idx").on(t.organizationId, t.documentId, t.chunk),
  ],
);
