// Importing a book (issue 33): rows per second end to end — the CSV streamed up, every chunk read from R2, parsed,
// matched and written in its batch, until the import is `completed` — for 100,000 Follow Up Boss rows, beside a
// 1,000-row import and 1,000 single POST /v1/contacts in the same run. The queue is played by the bench (each chunk's
// message delivered to the Worker's queue handler as soon as it is sent): the platform's own delivery delay between
// chunks is not ours to measure here. Also how many search terms the import wrote on the way (in bulk, migration 0019), and
// what the index's triggers would have cost instead.
import { expect, it } from "vitest";
import { call, json } from "../test/helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../test/helpers/factories";
import { request } from "../test/helpers/fault-table";
import { faultEnv } from "../test/helpers/faulty-bindings";

const HEADER =
  "First Name,Last Name,Email 1,Phone 1,Tags,Stage,Source,Address 1 - Street,Address 1 - City,Address 1 - State,Address 1 - Zip,Notes";

/** `n` people as Follow Up Boss exports them: names, an e-mail, a phone (each their own: a shared one would match), a tag or two, an address and a note on every third. */
function book(n: number, run: string): Uint8Array {
  const lines = [HEADER];
  for (let i = 0; i < n; i++) {
    const note = i % 3 === 0 ? `"Called about the house on Elm ${i % 400}, wants a second showing"` : "";
    lines.push(
      `Fn${i % 997},Ln${i % 4999},p${i}.${run}@bench.test,(416) ${200 + Math.floor(i / 10_000)}-${String(i % 10_000).padStart(4, "0")},"imported${i % 10 === 0 ? ", vip" : ""}",Lead,Zillow,${i % 900} Elm St,Toronto,ON,M5V ${i % 10}A${i % 7},${note}`,
    );
  }
  return new TextEncoder().encode(lines.join("\r\n"));
}

/** Imports `csv` end to end; answers the seconds it took and the import as it ended. */
async function importBook(owner: TestPrincipal, csv: Uint8Array): Promise<{ seconds: number; done: Record<string, any> }> {
  const f = faultEnv();
  const started = performance.now();
  const answer = await request(f, "POST", "/v1/imports?kind=contacts", {
    token: owner.token,
    raw: csv,
    headers: { "content-type": "text/csv", "content-length": String(csv.length) },
  });
  expect(answer.status).toBe(202);
  while (f.imports.held.length > 0) await f.imports.deliverOnce(f.env);
  const seconds = (performance.now() - started) / 1000;
  const done = (await json(await call("GET", `/v1/imports/${answer.body.data.id}`, { token: owner.token }))).data;
  return { seconds, done };
}

it("imports 100,000 rows end to end, beside 1,000 rows and 1,000 single creates", async () => {
  const run = crypto.randomUUID().slice(0, 8);
  const small = await createPrincipal({ shard: 0 });
  const singles = await createPrincipal({ shard: 0 });
  const big = await createPrincipal({ shard: 0 });

  const oneK = await importBook(small, book(1_000, `s${run}`));
  expect(oneK.done).toMatchObject({ status: "completed", created: 1_000, failed: 0 });

  const singleRows = Array.from({ length: 1_000 }, (_, i) => ({
    firstName: `Fn${i}`,
    lastName: `Ln${i}`,
    email: `one${i}.${run}@bench.test`,
    phone: "(416) 555-0101",
    tags: ["imported"],
    source: "ZILLOW",
  }));
  const t0 = performance.now();
  for (const body of singleRows) expect((await call("POST", "/v1/contacts", { token: singles.token, body })).status).toBe(201);
  const singleSeconds = (performance.now() - t0) / 1000;

  const csv = book(100_000, `b${run}`);
  const hundredK = await importBook(big, csv);
  expect(hundredK.done).toMatchObject({ status: "completed", processed: 100_000, created: 100_000, failed: 0 });
  expect((await json(await call("GET", "/v1/contacts?limit=1", { token: big.token }))).pagination.total).toBe(100_000);

  const db = await tenantDb(big.organizationId);
  const terms = (await db
    .prepare("SELECT COUNT(*) AS n FROM search_terms WHERE organization_id = ?")
    .bind(big.organizationId)
    .first<{ n: number }>())!.n;

  const triggers = await triggerShare(db, big.organizationId);

  const rate = (rows: number, seconds: number) => Math.round(rows / seconds);
  console.log(
    [
      "\n== Imports (issue 33): rows per second end to end (upload, every chunk read, parsed, matched, written, completed)",
      `  100,000-row Follow Up Boss CSV (${(csv.length / 1024 / 1024).toFixed(1)} MB, 200 chunks)   ${hundredK.seconds.toFixed(1).padStart(6)} s  ${String(rate(100_000, hundredK.seconds)).padStart(6)} rows/s   target >= 2,000 rows/s`,
      `  1,000-row import (2 chunks)                                 ${oneK.seconds.toFixed(1).padStart(6)} s  ${String(rate(1_000, oneK.seconds)).padStart(6)} rows/s`,
      `  baseline: 1,000 x POST /v1/contacts, one after another      ${singleSeconds.toFixed(1).padStart(6)} s  ${String(rate(1_000, singleSeconds)).padStart(6)} rows/s`,
      `  search terms of the 100,000 contacts (written by the import in bulk, not by the triggers): ${terms} (${(terms / 100_000).toFixed(1)} a contact)`,
      `  5,000 of those rows inserted again: into contacts ${triggers.withMs.toFixed(0)} ms, into a copy with the same indexes and no triggers ${triggers.withoutMs.toFixed(0)} ms: the triggers cost ${((triggers.withMs - triggers.withoutMs) / 5_000).toFixed(2)} ms a contact`,
    ].join("\n"),
  );
});

/**
 * What the search index's triggers cost: 5,000 of the imported rows inserted again (new ids and e-mails) into
 * `contacts`, and into a copy of the table with the same indexes but no triggers.
 */
async function triggerShare(db: D1Database, organizationId: string): Promise<{ withMs: number; withoutMs: number }> {
  const schema = await db
    .prepare("SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'contacts' AND sql IS NOT NULL AND type IN ('table', 'index')")
    .all<{ type: string; name: string; sql: string }>();
  const copy = schema.results.map((r) =>
    r.sql
      .replace(/\bcontacts\b/g, "bench_contacts_copy")
      .replace(/`contacts_/g, "`bench_copy_")
      .replace(/"contacts_/g, '"bench_copy_')
      .replace(/ contacts_/g, " bench_copy_"),
  );
  await db.batch(copy.map((q) => db.prepare(q)));
  const columns =
    "first_name, last_name, email, email_key, phone, secondary_phone, phone_key, secondary_phone_key, address, type, status, source, lead_score, lead_score_auto, tags, notes, preferences, assigned_to, created_at, updated_at, last_contacted_at, version";
  const insert = (table: string) =>
    db
      .prepare(
        `INSERT INTO ${table} (id, organization_id, ${columns}) SELECT lower(hex(randomblob(16))), organization_id, first_name, last_name, 'again.' || email, 'again.' || email_key, phone, secondary_phone, phone_key, secondary_phone_key, address, type, status, source, lead_score, lead_score_auto, tags, notes, preferences, assigned_to, created_at, updated_at, last_contacted_at, version FROM contacts WHERE organization_id = ? AND email_key NOT LIKE 'again.%' LIMIT 5000`,
      )
      .bind(organizationId);
  let t = performance.now();
  await insert("bench_contacts_copy").run();
  const withoutMs = performance.now() - t;
  t = performance.now();
  await insert("contacts").run();
  const withMs = performance.now() - t;
  await db.prepare("DROP TABLE bench_contacts_copy").run();
  return { withMs, withoutMs };
}
