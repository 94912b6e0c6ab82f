// Document search at scale (issue 12): 10,000 indexed documents in one organization against 100 in another, through
// the D1-backed index (development and tests; Vectorize in production), with a fake OpenAI-compatible AI gateway.
import { beforeAll, expect, it } from "vitest";
import { openAiCompatibleGateway } from "../src/ai/gateway";
import { openAiGateway, type FakeAiGateway } from "../test/helpers/ai-gateway";
import { createPrincipal, tenantDb, type TestPrincipal } from "../test/helpers/factories";
import { countingApp, helloWorld, measureInterleaved, printTable } from "./harness";

const BIG = 10_000;
const SMALL = 100;
const DIMENSIONS = 256;
const QUERY = "lease of the warehouse on Bay Street with a rent deposit";
let big: TestPrincipal;
let small: TestPrincipal;
let gateway: FakeAiGateway;

/** Deterministic pseudo-random unit vectors (mulberry32), so runs compare. */
function vectorOf(seed: number): Float32Array {
  let t = seed >>> 0;
  const next = () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r ^= r + Math.imul(r ^ (r >>> 7), 61 | r);
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
  const v = Float32Array.from({ length: DIMENSIONS }, next);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

const hex = (v: Float32Array) => [...new Uint8Array(v.buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");

/**
 * Seeds `n` documents and one chunk vector each, in SQL: documents by a recursive CTE, vectors from a JSON list of hex
 * float32 blobs (500 a statement). Document 0 gets `target`, the query's own embedding, so it must rank first.
 */
async function seed(organizationId: string, n: number, target: Float32Array) {
  const at = "2025-01-01T00:00:00.000Z";
  const docId = (i: number) => `${organizationId.slice(0, 8)}-bench-${String(i).padStart(5, "0")}`;
  const db = await tenantDb(organizationId);
  await db
    .prepare(
      `INSERT INTO documents (id, organization_id, form_key, status, canonical, sha256, deal_id, created_by, created_at, updated_at, version)
     WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2 - 1)
     SELECT substr(?1, 1, 8) || '-bench-' || printf('%05d', n), ?1, 'generic/free-form', 'GENERATED', '{}', '', NULL, NULL, ?3, ?3, 1 FROM seq`,
    )
    .bind(organizationId, n, at)
    .run();
  const statements: D1PreparedStatement[] = [];
  for (let start = 0; start < n; start += 500) {
    const rows = Array.from({ length: Math.min(500, n - start) }, (_, k) => {
      const i = start + k;
      return { d: docId(i), v: hex(i === 0 ? target : vectorOf(i * 7919 + n)) };
    });
    statements.push(
      db
        .prepare(
          `INSERT INTO document_vectors (organization_id, id, document_id, chunk, vector, indexed_at)
         SELECT ?1, json_extract(value, '$.d') || '#0', json_extract(value, '$.d'), 0, unhex(json_extract(value, '$.v')), ?2 FROM json_each(?3)`,
        )
        .bind(organizationId, at, JSON.stringify(rows)),
    );
  }
  for (let i = 0; i < statements.length; i += 10) await db.batch(statements.slice(i, i + 10));
  return docId(0);
}

let bigTarget: string;
let smallTarget: string;

beforeAll(async () => {
  gateway = await openAiGateway({ dimensions: DIMENSIONS });
  big = await createPrincipal();
  small = await createPrincipal();
  const [target] = await openAiCompatibleGateway({ baseUrl: gateway.url, token: gateway.token }).embed([QUERY]);
  const started = performance.now();
  bigTarget = await seed(big.organizationId, BIG, Float32Array.from(target!));
  smallTarget = await seed(small.organizationId, SMALL, Float32Array.from(target!));
  console.log(`seeded ${BIG} + ${SMALL} indexed documents in ${((performance.now() - started) / 1000).toFixed(1)} s`);
});

it("GET /api/documents/search over 10,000 indexed documents beside a 100-document baseline", async () => {
  const app = countingApp(gateway.vars);
  type Hits = { hits: { documentId: string; score: number }[] };
  const path = `/api/documents/search?q=${encodeURIComponent(QUERY)}`;
  const scenarios = [
    { name: `search, ${SMALL} documents (baseline)`, who: small, path, top: smallTarget },
    { name: `search, ${BIG.toLocaleString("en-US")} documents`, who: big, path, top: bigTarget },
    {
      name: `search, empty q (no gateway call), ${BIG.toLocaleString("en-US")} documents`,
      who: big,
      path: "/api/documents/search?q=",
      top: null,
    },
  ];
  const trips: Record<string, number> = {};
  for (const s of scenarios) {
    app.reset();
    const body = await app.get<Hits>(s.path, s.who.token);
    trips[s.name] = app.trips();
    if (s.top) {
      expect(body.hits[0]).toMatchObject({ documentId: s.top });
      expect(body.hits[0]!.score).toBeCloseTo(1, 5);
      expect(body.hits.length).toBe(20);
    } else expect(body.hits).toEqual([]);
  }
  const embedCalls = async () => (await gateway.requests()).filter((r) => r.path === "embeddings").length;
  const before = await embedCalls();
  await app.get(scenarios[0]!.path, small.token);
  expect((await embedCalls()) - before).toBe(1);

  const floor = await helloWorld();
  const figures = await measureInterleaved(
    scenarios.map((s) => ({ name: s.name, fn: () => app.get(s.path, s.who.token) })),
    { rounds: 10, perSample: 3, warmup: 3 },
  );
  printTable(
    `document search, ${BIG.toLocaleString("en-US")} documents against the ${SMALL}-document baseline (D1 index, fake gateway on 127.0.0.1)`,
    [floor, ...figures],
    figures[0],
  );
  console.log(
    "D1 round trips per request:\n" +
      scenarios.map((s) => `  ${s.name.padEnd(64)} ${trips[s.name]}`).join("\n") +
      "\n  (auth, then the D1 index's pages of 2,500 chunk vectors, then one check that the hits' documents exist)",
  );
  const authTrips = trips[scenarios[2]!.name]!;
  console.log(
    `Vectorize path (production) per query, by count, at any size: 1 embeddings call to the AI gateway + 1 Vectorize query (namespace = organization, topK 100) + ${authTrips + 1} D1 round trips (${authTrips} auth + 1 existence check of at most 20 documents); the D1 index instead reads ceil(chunks / 2,500) pages: ${trips[scenarios[1]!.name]! - authTrips - 1} for ${BIG.toLocaleString("en-US")} documents.`,
  );
});
