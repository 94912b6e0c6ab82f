import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { chunkText, documentIndexingConsumer, MAX_QUERY_CHARS } from "../../src/documents/indexing";
import { MAX_CHUNKS, vectorizeIndex } from "../../src/documents/vector-index";
import type { DomainEvent } from "../../src/events/event";
import { openAiGateway, type FakeAiGateway } from "../helpers/ai-gateway";
import { call, json } from "../helpers/client";
import { allOnShards, createDocument, leaseCanonical } from "../helpers/documents";
import { createPrincipal, tenantDb } from "../helpers/factories";

const freeForm = (title: string, body: string) => ({
  schemaVersion: 1,
  formKey: "generic/free-form",
  title,
  body,
  provenance: { aiDrafted: false },
});

/** The organization's stored DOCUMENT_GENERATED events, as the queue router hands them to consumers. */
async function generatedEvents(organizationId: string): Promise<DomainEvent[]> {
  const rows = await (await tenantDb(organizationId))
    .prepare(
      "SELECT id, type, organization_id AS organizationId, actor, occurred_at AS occurredAt, data FROM outbox_events WHERE organization_id = ? AND type = 'DOCUMENT_GENERATED' ORDER BY occurred_at",
    )
    .bind(organizationId)
    .all<{ id: string; type: string; organizationId: string; actor: string; occurredAt: string; data: string }>();
  return rows.results.map((r) => ({ ...r, actor: JSON.parse(r.actor), data: JSON.parse(r.data) }));
}

/** Runs the real indexing consumer on the organization's events, with the fake gateway configured. */
async function indexAll(organizationId: string, gateway: FakeAiGateway | null) {
  const events = await generatedEvents(organizationId);
  await documentIndexingConsumer.handle(events, {
    env: { ...env, ...(gateway?.vars ?? {}) },
    db: createDb(await tenantDb(organizationId)),
  });
  return events;
}

const vectorRows = (documentId: string) =>
  allOnShards<{ id: string; chunk: number; indexed_at: string }>(
    "SELECT id, chunk, indexed_at FROM document_vectors WHERE document_id = ? ORDER BY chunk",
    documentId,
  );

async function search(token: string, q: string | null, gateway: FakeAiGateway | null) {
  const res = await call("GET", `/api/documents/search${q === null ? "" : `?q=${encodeURIComponent(q)}`}`, {
    token,
    ...(gateway ? { vars: gateway.vars } : {}),
  });
  expect(res.status).toBe(200);
  const { hits } = await json<{ hits: { documentId: string; score: number }[] }>(res);
  for (const h of hits) {
    expect(h.score).toBeGreaterThanOrEqual(0);
    expect(h.score).toBeLessThanOrEqual(1);
  }
  return hits;
}

/** Two organizations: A with a lease and two memos, B with a memo that shares the words of A's queries. */
async function twoOrganizations() {
  const gateway = await openAiGateway();
  const a = await createPrincipal();
  const b = await createPrincipal();
  const lease = await createDocument(a.token, leaseCanonical({ tenants: [{ name: "Priya Patel", email: "priya@tenant.test" }] }));
  const roof = await createDocument(
    a.token,
    freeForm("Roof repair quote", "Quote for replacing the warehouse roof membrane and flashing, Bay Street warehouse."),
  );
  const parking = await createDocument(
    a.token,
    freeForm("Parking agreement", "Two parking spaces in the underground garage, monthly fee, access fob."),
  );
  const other = await createDocument(
    b.token,
    freeForm("Roof repair quote", "Warehouse roof repair quote: membrane, flashing, Bay Street."),
  );
  await indexAll(a.organizationId, gateway);
  await indexAll(b.organizationId, gateway);
  return { gateway, a, b, lease, roof, parking, other };
}

describe("GET /api/documents/search", () => {
  it("ranks the relevant document first, one hit per document, never another organization's", async () => {
    const { gateway, a, b, lease, roof, parking, other } = await twoOrganizations();

    const roofHits = await search(a.token, "warehouse roof repair", gateway);
    expect(roofHits[0]!.documentId).toBe(roof.id);
    expect(roofHits.map((h) => h.documentId)).not.toContain(other.id);
    expect(new Set(roofHits.map((h) => h.documentId)).size).toBe(roofHits.length);
    expect(roofHits.every((h, i) => i === 0 || roofHits[i - 1]!.score >= h.score)).toBe(true);
    expect(roofHits[0]!.score).toBeGreaterThan(0.5);

    // The lease is found by what its canonical data says: a tenant's name and the rental unit's street.
    expect((await search(a.token, "lease for Priya Patel on Queen St", gateway))[0]!.documentId).toBe(lease.id);
    expect((await search(a.token, "underground parking garage", gateway))[0]!.documentId).toBe(parking.id);

    // B sees its own memo only, for the same query.
    expect((await search(b.token, "warehouse roof repair", gateway)).map((h) => h.documentId)).toEqual([other.id]);

    // Each search is one embeddings request carrying the query alone.
    const asked = (await gateway.requests()).filter((r) => r.path === "embeddings").map((r) => r.body.input);
    expect(asked.slice(-4)).toEqual([
      ["warehouse roof repair"],
      ["lease for Priya Patel on Queen St"],
      ["underground parking garage"],
      ["warehouse roof repair"],
    ]);
  });

  it("an empty or missing q answers hits [] without calling the gateway (rule 4)", async () => {
    const { gateway, a } = await twoOrganizations();
    const before = (await gateway.requests()).length;
    expect(await search(a.token, "", gateway)).toEqual([]);
    expect(await search(a.token, "   ", gateway)).toEqual([]);
    expect(await search(a.token, null, gateway)).toEqual([]);
    expect((await gateway.requests()).length).toBe(before);
  });

  it("without an AI gateway every query answers hits [] (rule 4), and the consumer indexes nothing", async () => {
    const { token, organizationId } = await createPrincipal();
    const doc = await createDocument(token, freeForm("Roof repair quote", "Warehouse roof."));
    await indexAll(organizationId, null);
    expect(await vectorRows(doc.id)).toEqual([]);
    expect(await search(token, "warehouse roof", null)).toEqual([]);
  });

  it(`a q over ${MAX_QUERY_CHARS} characters is a 400 naming q`, async () => {
    const gateway = await openAiGateway();
    const { token } = await createPrincipal();
    const res = await call("GET", `/api/documents/search?q=${"a".repeat(MAX_QUERY_CHARS + 1)}`, { token, vars: gateway.vars });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await json(res))).toContain("q");
    expect(await gateway.requests()).toEqual([]);
    expect((await call("GET", `/api/documents/search?q=${"a".repeat(MAX_QUERY_CHARS)}`, { token, vars: gateway.vars })).status).toBe(200);
  });
});

describe("the indexing consumer (DOCUMENT_GENERATED)", () => {
  it("handling the same event again leaves one set of vectors, ids documentId#chunk", async () => {
    const gateway = await openAiGateway();
    const { token, organizationId } = await createPrincipal();
    const doc = await createDocument(token, leaseCanonical());
    const events = await indexAll(organizationId, gateway);
    const first = await vectorRows(doc.id);
    expect(first.map((r) => r.id)).toEqual([`${doc.id}#0`]);
    const db = createDb(await tenantDb(organizationId));
    await documentIndexingConsumer.handle(events, { env: { ...env, ...gateway.vars }, db });
    await documentIndexingConsumer.handle([...events, ...events], { env: { ...env, ...gateway.vars }, db });
    expect((await vectorRows(doc.id)).map((r) => r.id)).toEqual([`${doc.id}#0`]);
    expect((await search(token, "standard form of lease", gateway)).map((h) => h.documentId)).toEqual([doc.id]);
  });

  it("chunks a long document: a phrase near its end finds it", async () => {
    const gateway = await openAiGateway();
    const { token, organizationId } = await createPrincipal();
    const filler = Array.from({ length: 600 }, (_, i) => `clause${i % 50} applies`).join(" ");
    const long = await createDocument(
      token,
      freeForm("Master services agreement", `${filler} Finally the kangaroo sanctuary easement survives termination.`),
    );
    await createDocument(token, freeForm("Short memo", "Kitchen renovation budget."));
    await indexAll(organizationId, gateway);
    const rows = await vectorRows(long.id);
    expect(rows.length).toBeGreaterThan(1);
    expect(rows.map((r) => r.chunk)).toEqual(rows.map((_, i) => i));
    const hits = await search(token, "kangaroo sanctuary easement", gateway);
    expect(hits[0]!.documentId).toBe(long.id);
  });

  it("an event naming a document of another organization indexes nothing in either", async () => {
    const gateway = await openAiGateway();
    const a = await createPrincipal();
    const b = await createPrincipal();
    const doc = await createDocument(a.token, freeForm("Roof repair quote", "Warehouse roof."));
    const [event] = await generatedEvents(a.organizationId);
    // The event as b's shard would hand it over.
    await documentIndexingConsumer.handle([{ ...event!, organizationId: b.organizationId }], {
      env: { ...env, ...gateway.vars },
      db: createDb(await tenantDb(b.organizationId)),
    });
    expect(await vectorRows(doc.id)).toEqual([]);
  });
});

describe("chunkText", () => {
  it("keeps short text whole, cuts long text into overlapping pieces, and stops at MAX_CHUNKS", () => {
    expect(chunkText("one short line")).toEqual(["one short line"]);
    const words = Array.from({ length: 2_000 }, (_, i) => `w${i}`).join(" ");
    const chunks = chunkText(words);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((c) => c.length <= 2_000)).toBe(true);
    expect(chunks[0]!.startsWith("w0 ")).toBe(true);
    expect(chunks.at(-1)!.endsWith("w1999")).toBe(true);
    expect(chunkText("x ".repeat(1_000_000))).toHaveLength(MAX_CHUNKS);
  });
});

/** An in-memory VectorizeIndex: ids are unique across the index, a query sees its namespace only (cosine metric). */
function fakeVectorize() {
  const stored = new Map<string, { values: number[]; namespace?: string; metadata?: unknown }>();
  const queries: { topK?: number; namespace?: string; returnMetadata?: unknown }[] = [];
  const cos = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0) / (Math.hypot(...a) * Math.hypot(...b));
  const index = {
    async upsert(vectors: VectorizeVector[]) {
      for (const v of vectors) stored.set(v.id, { values: [...(v.values as number[])], namespace: v.namespace, metadata: v.metadata });
      return { mutationId: "m" };
    },
    async deleteByIds(ids: string[]) {
      for (const id of ids) stored.delete(id);
      return { mutationId: "m" };
    },
    async query(vector: number[], opts: VectorizeQueryOptions) {
      queries.push(opts);
      const matches = [...stored]
        .filter(([, v]) => v.namespace === opts.namespace)
        .map(([id, v]) => ({ id, score: cos(vector, v.values) }))
        .sort((x, y) => y.score - x.score)
        .slice(0, opts.topK ?? 5);
      return { count: matches.length, matches };
    },
  };
  return { index: index as unknown as VectorizeIndex, stored, queries };
}

describe("the Vectorize index", () => {
  it("writes in the organization's namespace, replaces a document's chunks, queries one namespace, removes documents", async () => {
    const fake = fakeVectorize();
    const idx = vectorizeIndex(fake.index);
    await idx.putDocument(
      "org-a",
      "doc-1",
      [0, 1, 2].map((chunk) => ({ documentId: "doc-1", chunk, values: [1, chunk, 0] })),
    );
    await idx.putDocument("org-b", "doc-2", [{ documentId: "doc-2", chunk: 0, values: [1, 0, 0] }]);
    expect([...fake.stored.keys()].sort()).toEqual(["doc-1#0", "doc-1#1", "doc-1#2", "doc-2#0"]);
    expect(fake.stored.get("doc-1#1")).toMatchObject({ namespace: "org-a", metadata: { documentId: "doc-1", chunk: 1 } });

    // Re-indexed shorter: the same ids are overwritten and the chunks past the new end go.
    await idx.putDocument("org-a", "doc-1", [{ documentId: "doc-1", chunk: 0, values: [0, 1, 0] }]);
    expect([...fake.stored.keys()].sort()).toEqual(["doc-1#0", "doc-2#0"]);
    expect(fake.stored.get("doc-1#0")!.values).toEqual([0, 1, 0]);

    expect(await idx.query("org-a", [1, 0, 0], 500)).toEqual([{ documentId: "doc-1", score: 0 }]);
    expect(await idx.query("org-b", [1, 0, 0], 10)).toEqual([{ documentId: "doc-2", score: 1 }]);
    expect(await idx.query("org-c", [1, 0, 0], 10)).toEqual([]);
    expect(fake.queries[0]).toMatchObject({ topK: 100, namespace: "org-a", returnMetadata: "none" });

    await idx.removeDocuments("org-a", ["doc-1"]);
    expect([...fake.stored.keys()]).toEqual(["doc-2#0"]);
  });
});

describe("search under adversarial input (found by an HTTP pass)", () => {
  it("refuses control characters in q, and a gateway answering absurd vectors is a 502, never a 500", async () => {
    const { token } = await createPrincipal();
    expect((await call("GET", "/api/documents/search?q=%00", { token })).status).toBe(400);
    const absurd = await openAiGateway({
      script: [{ status: 200, body: { data: [{ index: 0, embedding: new Array(20_000).fill(0.5) }] } }],
    });
    const res = await call("GET", "/api/documents/search?q=mango", { token, vars: absurd.vars });
    expect(res.status).toBe(502);
  });

  it("a document posted back with dealId null is taken (a read shows null)", async () => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/api/documents", {
      token,
      body: { formKey: "on/standard-lease", canonical: leaseCanonical(), dealId: null },
    });
    expect(res.status).toBe(201);
    expect((await json(res)).dealId).toBeNull();
  });
});
