import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parseCsv, readCsvChunk } from "../../src/imports/csv";
import { planContactImport } from "../../src/intake/service";
import { ContactCreate } from "../../src/contacts/schemas";
import { createDb } from "../../src/db/client";
import { commit } from "../../src/events/commit";
import { StaleWrite } from "../../src/db/write";
import { systemContext } from "../../src/shards/tenants";
import { call, json } from "../helpers/client";
import { createContact, getContact, uniqueEmail } from "../helpers/contacts";
import { expectDerivedFiguresExact } from "../helpers/derived-figures";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { importErrors, settledImport, startCsvImport, startRowsImport, uploadCsv } from "../helpers/imports";
import { request } from "../helpers/fault-table";
import { contactTerms, termsIndexed } from "../helpers/search";
import { faultEnv, FaultPlan } from "../helpers/faulty-bindings";

const FUB_HEADER =
  "First Name,Last Name,Email 1,Email 2,Phone 1,Phone 2,Tags,Stage,Source,Assigned To,Address 1 - Street,Address 1 - City,Address 1 - State,Address 1 - Zip,Notes";

const contactsOf = async (organizationId: string) =>
  (
    await (
      await tenantDb(organizationId)
    )
      .prepare("SELECT * FROM contacts WHERE organization_id = ? ORDER BY email_key")
      .bind(organizationId)
      .all<Record<string, any>>()
  ).results;

const total = async (token: string) => (await json(await call("GET", "/v1/contacts?limit=1", { token }))).pagination.total as number;

describe("the CSV reader", () => {
  it("reads quotes, doubled quotes, line breaks inside quotes, CRLF, a BOM and blank lines", () => {
    const text = '\uFEFFa,b\r\n"x, y","say ""hi"""\r\n\r\n"multi\nline",2\n3,\n';
    const records = parseCsv(text, { start: 1 });
    expect(records.map((r) => r.fields)).toEqual([
      ["a", "b"],
      ["x, y", 'say "hi"'],
      ["multi\nline", "2"],
      ["3", ""],
    ]);
  });

  it("leaves a record cut by the window's end for the next window, and resumes at its byte", async () => {
    const rows = Array.from({ length: 2000 }, (_, i) => `n${i},"Zoë ${i}\nsecond line, ✓",${"x".repeat(i % 300)}`);
    const bytes = new TextEncoder().encode(`h1,h2,h3\r\n${rows.join("\r\n")}`);
    const read = async (offset: number, length: number) => bytes.slice(offset, offset + Math.min(length, 4096));
    const seen: string[][] = [];
    let offset = 0;
    for (let guard = 0; guard < 10_000; guard++) {
      const chunk = await readCsvChunk(read, bytes.length, offset, 7);
      seen.push(...chunk.records);
      offset = chunk.nextOffset;
      if (chunk.done) break;
    }
    expect(seen.length).toBe(2001);
    expect(seen[0]).toEqual(["h1", "h2", "h3"]);
    expect(seen[1500]).toEqual(["n1499", "Zoë 1499\nsecond line, ✓", "x".repeat(1499 % 300)]);
  });
});

describe("POST /v1/imports (contacts)", () => {
  it("imports a Follow Up Boss export; the errors CSV lists the bad rows by number, column and reason, and no data", async () => {
    const owner = await createPrincipal();
    const ada = uniqueEmail("ada");
    const bad = uniqueEmail("bad");
    const csv = [
      FUB_HEADER,
      `Ada,Lovelace,${ada},ada.other@example.test,(416) 555-0101,416-555-0102,"Buyer, Hot",Active Client,Zillow Premier Agent,${owner.userId},1 Elm St,Toronto,ON,M5V 1A1,"Likes ""old"" houses\nand gardens"`,
      "Nobody,Without,,,,,,Lead,,,,,,,",
      `Bad,Email,not-an-email,,,,,Lead,,,,,,,`,
      `Grace,Hopper,${bad},,phone?,,,Lead,Website,Someone Unknown,,,,,`,
    ].join("\r\n");
    const started = await startCsvImport(owner, csv);
    expect(started).toMatchObject({ status: "queued", kind: "contacts", processed: 0 });
    const done = await settledImport(owner, started.id);
    expect(done).toMatchObject({
      status: "completed",
      format: "followupboss",
      processed: 4,
      created: 1,
      updated: 0,
      skipped: 0,
      failed: 3,
    });
    const [contact] = (await json(await call("GET", `/v1/contacts?email=${encodeURIComponent(ada)}`, { token: owner.token }))).data;
    expect(contact).toMatchObject({
      firstName: "Ada",
      lastName: "Lovelace",
      phone: "(416) 555-0101",
      secondaryPhone: "416-555-0102",
      tags: ["Buyer", "Hot"],
      type: "CLIENT",
      source: "ZILLOW_PREMIER_AGENT",
      assignedTo: owner.userId,
      address: { street: "1 Elm St", city: "Toronto", state: "ON", zipCode: "M5V 1A1" },
      notes: 'Likes "old" houses\nand gardens',
    });
    const errors = await importErrors(owner, started.id);
    expect(errors.map(([row, column]) => [row, column])).toEqual([
      ["3", "Email 1"],
      ["4", "Email 1"],
      ["5", "Phone 1"],
    ]);
    expect(errors[0]![2]).toMatch(/^email_required/);
    // Nothing of a row's data is in the errors CSV.
    const text = await (await call("GET", `/v1/imports/${started.id}/errors`, { token: owner.token })).text();
    for (const value of ["not-an-email", "phone?", "Nobody", "Grace", bad]) expect(text).not.toContain(value);
    // The source file is gone from R2 once the import ended.
    expect(await env.FILES.get(`imports/${owner.organizationId}/${started.id}.csv`)).toBeNull();
    await expectDerivedFiguresExact(owner.organizationId);
  });

  it("reads kvCORE's header", async () => {
    const owner = await createPrincipal();
    const email = uniqueEmail("kv");
    const done = await settledImport(
      owner,
      (
        await startCsvImport(
          owner,
          `first_name,last_name,email,phone,cell_phone,address,city,state,zip,source,tags,status\nKay,Vee,${email},555-0100,555-0199,2 Oak Ave,Austin,TX,78701,Open House,seller,Closed\n`,
        )
      ).id,
    );
    expect(done).toMatchObject({ status: "completed", format: "kvcore", created: 1, failed: 0 });
    const [c] = (await json(await call("GET", `/v1/contacts?email=${encodeURIComponent(email)}`, { token: owner.token }))).data;
    expect(c).toMatchObject({
      firstName: "Kay",
      lastName: "Vee",
      phone: "555-0100",
      secondaryPhone: "555-0199",
      type: "PAST_CLIENT",
      source: "OPEN_HOUSE",
      tags: ["seller"],
      address: { street: "2 Oak Ave", city: "Austin", state: "TX", zipCode: "78701" },
    });
  });

  it.each([
    ["skip", { notes: "kept", source: "WEBSITE", tags: ["old"] }, { skipped: 1, updated: 0 }],
    ["update", { notes: "from the file", source: "PORTAL", tags: ["old", "new"] }, { skipped: 0, updated: 1 }],
    ["merge", { notes: "kept", source: "WEBSITE", tags: ["old"] }, { skipped: 0, updated: 1 }],
  ] as const)("onDuplicate=%s", async (rule, expected, counts) => {
    const owner = await createPrincipal();
    const existing = await createContact(owner.token, { email: uniqueEmail("dup"), notes: "kept", source: "WEBSITE", tags: ["old"] });
    const rows = [
      {
        firstName: "Other",
        lastName: "Name",
        email: existing.email.toUpperCase(),
        notes: "from the file",
        source: "Portal",
        tags: "new",
        phone: "555-0142",
      },
    ];
    const done = await settledImport(owner, (await startRowsImport(owner, { kind: "contacts", rows, onDuplicate: rule })).id);
    expect(done).toMatchObject({ status: "completed", format: "native", processed: 1, created: 0, failed: 0, ...counts });
    const after = await getContact(owner.token, existing.id);
    expect(after).toMatchObject(expected);
    // The e-mail it matched by never changes; merge fills only what was empty (phone), update overwrites the name.
    expect(after.email).toBe(existing.email);
    expect(after.phone).toBe(rule === "skip" ? null : "555-0142");
    expect(after.firstName).toBe(rule === "update" ? "Other" : existing.firstName);
    expect(await total(owner.token)).toBe(1);
    await expectDerivedFiguresExact(owner.organizationId);
  });

  it("matches as lead intake does: a differently written phone finds the contact, whose e-mail stays", async () => {
    const owner = await createPrincipal();
    const existing = await createContact(owner.token, { email: uniqueEmail("tel"), phone: "+1 416 555 0199" });
    const rows = [{ firstName: "Tel", lastName: "Match", email: uniqueEmail("other"), phone: "(416) 555-0199", notes: "found by phone" }];
    const done = await settledImport(owner, (await startRowsImport(owner, { kind: "contacts", rows, onDuplicate: "merge" })).id);
    expect(done).toMatchObject({ status: "completed", created: 0, updated: 1 });
    expect(await getContact(owner.token, existing.id)).toMatchObject({
      email: existing.email,
      phone: "+1 416 555 0199",
      notes: "found by phone",
    });
    expect(await total(owner.token)).toBe(1);
  });

  it("takes JSON rows with a mapping, and the same e-mail twice in one file is one contact", async () => {
    const owner = await createPrincipal();
    const email = uniqueEmail("json");
    const rows = [
      { Given: "Jo", Family: "Son", Mail: email, Label: "a" },
      { Given: "Jo", Family: "Son", Mail: email, Label: "b", Cell: "555-0111" },
    ];
    const done = await settledImport(
      owner,
      (
        await startRowsImport(owner, {
          kind: "contacts",
          rows,
          onDuplicate: "merge",
          mapping: { Given: "firstName", Family: "lastName", Mail: "email", Label: "tags", Cell: "phone" },
        })
      ).id,
    );
    expect(done).toMatchObject({ status: "completed", format: "custom", processed: 2, created: 1, updated: 1 });
    const all = await contactsOf(owner.organizationId);
    expect(all.map((c) => [c.email, c.phone, JSON.parse(c.tags)])).toEqual([[email, "555-0111", ["a"]]]);
    await expectDerivedFiguresExact(owner.organizationId);
  });

  it("maps columns to custom fields, read as their types; a bad value fails its row in the errors CSV; merge fills only missing keys", async () => {
    const owner = await createPrincipal();
    for (const [key, type] of [
      ["budget", "number"],
      ["preapproved", "boolean"],
      ["side", "text"],
    ]) {
      expect(
        (await call("POST", "/v1/custom-fields", { token: owner.token, body: { object: "contact", key, label: key, type } })).status,
      ).toBe(201);
    }
    const existing = await createContact(owner.token, { email: uniqueEmail("cf"), customFields: { side: "seller" } });
    const fresh = uniqueEmail("cf-new");
    const rows = [
      { Mail: fresh, Given: "Cee", Family: "Eff", Budget: "450,000", Approved: "yes", Side: "buyer" },
      { Mail: uniqueEmail("cf-bad"), Given: "Bad", Family: "Value", Budget: "lots", Approved: "yes", Side: "" },
      { Mail: existing.email, Given: "Ex", Family: "Isting", Budget: "1000", Approved: "no", Side: "buyer" },
    ];
    const mapping = {
      Mail: "email",
      Given: "firstName",
      Family: "lastName",
      Budget: "customFields.budget",
      Approved: "customFields.preapproved",
      Side: "customFields.side",
    };
    const { id } = await startRowsImport(owner, { kind: "contacts", rows, onDuplicate: "merge", mapping });
    expect(await settledImport(owner, id)).toMatchObject({ status: "completed", processed: 3, created: 1, updated: 1, failed: 1 });
    const errors = await importErrors(owner, id);
    expect(errors).toEqual([["3", "Budget", expect.stringMatching(/^invalid_type: customFields\.budget /)]]);
    const created = (await json(await call("GET", `/v1/contacts?email=${encodeURIComponent(fresh)}`, { token: owner.token }))).data[0];
    expect(created.customFields).toEqual({ budget: 450000, preapproved: true, side: "buyer" });
    expect((await getContact(owner.token, existing.id)).customFields).toEqual({ side: "seller", budget: 1000, preapproved: false });
  });

  it("refuses a mapping to no field, a CSV without kind, more than 1,000 rows (422) and a file over 50 MB (413)", async () => {
    const owner = await createPrincipal();
    const mapped = await call("POST", "/v1/imports", {
      token: owner.token,
      body: { kind: "contacts", rows: [{ a: "1" }], mapping: { a: "shoeSize", b: "email" } },
    });
    expect(mapped.status).toBe(422);
    expect((await json(mapped)).error.errors.map((e: any) => [e.field, e.code])).toEqual([
      ["mapping.a", "invalid_target"],
      ["mapping.b", "unknown_column"],
    ]);
    expect((await uploadCsv(owner.token, "email\na@b.test\n", "onDuplicate=skip")).status).toBe(422);
    const many = await call("POST", "/v1/imports", {
      token: owner.token,
      body: { kind: "contacts", rows: Array.from({ length: 1001 }, () => ({ email: "x@y.test" })) },
    });
    expect(many.status).toBe(422);
    const big = await uploadCsv(owner.token, "email\n", "kind=contacts", { "content-length": String(50 * 1024 * 1024 + 1) }).catch(
      (e) => e,
    );
    expect(big.status).toBe(413);
  });

  it("is for owners and admins (imports:manage): an agent gets 403; another organization's import is 404", async () => {
    const owner = await createPrincipal();
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    const res = await uploadCsv(agent.token, "email\na@b.test\n");
    expect(res.status).toBe(403);
    expect((await json(res)).error.code).toBe("insufficient_role");
    const started = await startCsvImport(owner, `First Name,Last Name,Email 1\nA,B,${uniqueEmail()}\n`);
    const stranger = await createPrincipal();
    for (const [method, path] of [
      ["GET", `/v1/imports/${started.id}`],
      ["GET", `/v1/imports/${started.id}/errors`],
      ["POST", `/v1/imports/${started.id}/cancel`],
    ] as const) {
      expect((await call(method, path, { token: stranger.token })).status).toBe(404);
    }
    await settledImport(owner, started.id);
  });
});

describe("the search index of an import's contacts", () => {
  /** The record's terms in the index, then those the contacts' trigger writes for the row as it stands (a real UPDATE of it, undone). */
  async function importedAndTriggered(db: D1Database, id: string): Promise<[string[], string[]]> {
    const imported = await termsIndexed(db, id);
    const { notes } = (await db.prepare("SELECT notes FROM contacts WHERE id = ?").bind(id).first<{ notes: string | null }>())!;
    await db.prepare("UPDATE contacts SET notes = ifnull(notes, '') || ' zzprobe' WHERE id = ?").bind(id).run();
    await db.prepare("UPDATE contacts SET notes = ? WHERE id = ?").bind(notes, id).run();
    return [imported, await termsIndexed(db, id)];
  }

  it("holds, for a contact an import created or updated, exactly the terms the triggers write, and q finds it as one written by the API", async () => {
    const owner = await createPrincipal();
    const db = await tenantDb(owner.organizationId);
    const existing = await createContact(owner.token, { firstName: "Old", lastName: "Name", email: uniqueEmail("upd"), tags: ["seed"] });
    const rows = [
      {
        firstName: "Zoë",
        lastName: "Łukasiewicz-O'Brien",
        email: uniqueEmail("zoe"),
        phone: "+1 (416) 555-0101",
        secondaryPhone: "416.555.0102 ext 7",
        tags: 'first-time buyer, say "hi", ÉLITE',
        notes: "Called about Elm St.\n\tWants ＡＢＣ１２; 東京、大阪 «x»—y…z",
      },
      {
        firstName: "E\u0301mile",
        lastName: "ÅSTRÖM",
        email: uniqueEmail("emile"),
        notes: Array.from({ length: 300 }, (_, i) => `wörd${i % 120}`).join("—"),
      },
      {
        firstName: "Straße",
        lastName: "Nakamura",
        email: existing.email,
        phone: "1-416-555-0199",
        tags: "Referral-Partner",
        notes: "Moved to Oak Ave",
      },
    ];
    const done = await settledImport(owner, (await startRowsImport(owner, { kind: "contacts", rows, onDuplicate: "update" })).id);
    expect(done).toMatchObject({ status: "completed", created: 2, updated: 1, failed: 0 });
    const all = await contactsOf(owner.organizationId);
    expect(all).toHaveLength(3);
    for (const contact of all) {
      const [imported, triggered] = await importedAndTriggered(db, contact.id);
      expect(imported, contact.email).toEqual(triggered);
      expect(imported).toEqual(contactTerms(await getContact(owner.token, contact.id)));
    }
    expect(await termsIndexed(db, existing.id)).toContain("strasse");
    expect(await termsIndexed(db, existing.id)).not.toContain("old");
    for (const [q, email] of [
      ["lukasiewicz obrien", rows[0]!.email],
      ["emile wörd119", rows[1]!.email],
      ["strasse partner 416555019", existing.email],
    ] as const) {
      const found = (await json(await call("GET", `/v1/contacts?q=${encodeURIComponent(q)}`, { token: owner.token }))).data;
      expect(
        found.map((c: { email: string }) => c.email),
        q,
      ).toEqual([email]);
    }
    // The triggers stand aside only inside an import's batch: a contact written by the API afterwards is indexed by them.
    expect((await db.prepare("SELECT COUNT(*) AS n FROM search_suspended").first<{ n: number }>())!.n).toBe(0);
    const later = await createContact(owner.token, { firstName: "Later", lastName: "Written" });
    expect(await termsIndexed(db, later.id)).toEqual(contactTerms(later));
  });
});

describe("a chunk racing a delete of a contact it updates", () => {
  it("the chunk's batch fails as a lost race (guarded on the version it read): the deleted contact stays deleted", async () => {
    const owner = await createPrincipal();
    const existing = await createContact(owner.token, { email: uniqueEmail("raced"), notes: "before" });
    const ctx = systemContext(env, createDb(await tenantDb(owner.organizationId)), owner.organizationId, "test", () => {});
    const input = ContactCreate.parse({ firstName: "Ra", lastName: "Ced", email: existing.email, notes: "from the import" });
    const plan = await planContactImport(ctx, [{ input, emails: [existing.email], phones: [] }], "update");
    expect(plan.outcomes).toEqual(["updated"]);
    expect((await call("DELETE", `/v1/contacts/${existing.id}`, { token: owner.token })).status).toBe(200);
    await expect(commit(ctx, plan.statements)).rejects.toBeInstanceOf(StaleWrite);
    expect((await call("GET", `/v1/contacts/${existing.id}`, { token: owner.token })).status).toBe(404);
    expect(await total(owner.token)).toBe(0);
    await expectDerivedFiguresExact(owner.organizationId);
    // The failed batch took its suspension of the search triggers with it: the next write is indexed.
    const later = await createContact(owner.token, { firstName: "After", lastName: "Race" });
    expect(await termsIndexed(await tenantDb(owner.organizationId), later.id)).toEqual(contactTerms(later));
  });
});

describe("imports and erasure", () => {
  it("an erasure waits while an import runs (409 import_running); afterwards imports hold nothing of the person", async () => {
    const owner = await createPrincipal();
    const email = uniqueEmail("erase-me");
    const f = faultEnv();
    // Held: the import stays queued until its message is delivered.
    const started = await request(f, "POST", "/v1/imports", {
      token: owner.token,
      body: {
        kind: "contacts",
        rows: [
          { firstName: "Erin", lastName: "Erasable", email, phone: "416-555-0177" },
          { firstName: "Erin", lastName: "Erasable", email: "not-an-email" },
        ],
      },
    });
    const id = started.body.data.id;
    const person = await createContact(owner.token, { firstName: "Erin", lastName: "Erasable", email });
    const refused = await call("DELETE", `/v1/contacts/${person.id}?erase=true`, { token: owner.token });
    expect(refused.status).toBe(409);
    expect((await json(refused)).error.code).toBe("import_running");
    while (f.imports.held.length > 0) await f.imports.deliverOnce(f.env);
    expect((await settledImport(owner, id)).status).toBe("completed");
    expect((await call("DELETE", `/v1/contacts/${person.id}?erase=true`, { token: owner.token })).status).toBe(200);
    const db = await tenantDb(owner.organizationId);
    const rows = JSON.stringify([
      ...(await db.prepare("SELECT * FROM imports WHERE organization_id = ?").bind(owner.organizationId).all()).results,
      ...(await db.prepare("SELECT * FROM import_errors WHERE organization_id = ?").bind(owner.organizationId).all()).results,
    ]);
    for (const piece of [email, "Erin", "Erasable", "0177", "not-an-email"]) expect(rows).not.toContain(piece);
    expect((await env.FILES.list({ prefix: `imports/${owner.organizationId}/` })).objects).toEqual([]);
  });
});

describe("POST /v1/imports (properties)", () => {
  it("imports listings and skips one whose mlsId exists", async () => {
    const owner = await createPrincipal();
    const mls = `MLS-${crypto.randomUUID().slice(0, 8)}`;
    const csv = `mlsId,street,city,state,zipCode,propertyType,bedrooms,bathrooms,listPrice\n${mls},1 Bay St,Toronto,ON,M5J 2N8,Single Family,3,2.5,"$1,250,000"\n${mls},1 Bay St,Toronto,ON,M5J 2N8,Condo,1,1,500000\n,2 Bay St,Toronto,ON,M5J 2N8,castle,1,1,1\n`;
    const done = await settledImport(owner, (await startCsvImport(owner, csv, "kind=properties")).id);
    expect(done).toMatchObject({ status: "completed", processed: 3, created: 1, skipped: 1, failed: 1 });
    const list = (await json(await call("GET", "/v1/properties", { token: owner.token }))).data;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      mlsId: mls,
      details: { propertyType: "SINGLE_FAMILY", bedrooms: 3, bathrooms: 2.5 },
      listing: { listPrice: 1_250_000, status: "ACTIVE" },
    });
    expect((await importErrors(owner, done.id)).map(([row, column]) => [row, column])).toEqual([["4", "propertyType"]]);
  });
});

/** A Follow Up Boss-shaped file of `n` people (one chunk is 500). */
const book = (n: number) =>
  new TextEncoder().encode(
    [
      FUB_HEADER,
      ...Array.from(
        { length: n },
        (_, i) => `P,Person ${i},p.${i}.${crypto.randomUUID().slice(0, 8)}@example.test,,,,imported,Lead,,,,,,,`,
      ),
    ].join("\r\n"),
  );

describe("an import's chunks on a held queue", () => {
  const upload = (f: ReturnType<typeof faultEnv>, token: string, csv: Uint8Array) =>
    request(f, "POST", "/v1/imports?kind=contacts", {
      token,
      raw: csv,
      headers: { "content-type": "text/csv", "content-length": String(csv.length) },
    });

  it("cancelled mid-way: no chunk runs after the cancel, what ran stays, the file leaves R2", async () => {
    const owner = await createPrincipal();
    const f = faultEnv();
    const started = await upload(f, owner.token, book(1_200));
    expect(started.status).toBe(202);
    const id = started.body.data.id;
    expect(await f.imports.deliverOnce(f.env)).toBe(1); // chunk 1: 500 people
    expect((await request(f, "GET", `/v1/imports/${id}`, { token: owner.token })).body.data).toMatchObject({
      status: "running",
      processed: 500,
      created: 500,
    });
    const cancelled = await request(f, "POST", `/v1/imports/${id}/cancel`, { token: owner.token });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({ status: "cancelled", processed: 500 });
    expect(f.imports.held.length).toBe(1); // the message of chunk 2 was sent before the cancel
    await f.imports.deliverOnce(f.env);
    expect(f.imports.held.length).toBe(0);
    expect((await request(f, "GET", `/v1/imports/${id}`, { token: owner.token })).body.data).toMatchObject({
      status: "cancelled",
      processed: 500,
      created: 500,
    });
    expect(await total(owner.token)).toBe(500);
    expect((await request(f, "POST", `/v1/imports/${id}/cancel`, { token: owner.token })).body.error.code).toBe("import_finished");
    expect(await env.FILES.head(`imports/${owner.organizationId}/${id}.csv`)).toBeNull();
    await expectDerivedFiguresExact(owner.organizationId);
  });

  it("resumes at its chunk after a fault there: the queue's retry runs it once, counts exact, no duplicates", async () => {
    const owner = await createPrincipal();
    const plan = new FaultPlan();
    const f = faultEnv(plan);
    const started = await upload(f, owner.token, book(1_100));
    const id = started.body.data.id;
    await f.imports.deliverOnce(f.env); // chunk 1
    // Chunk 2's batch commits but D1's answer is lost (a timeout after the commit): the consumer fails, the message is retried.
    plan.arm(plan.steps.length, "lost");
    await f.imports.deliverOnce(f.env);
    expect(plan.hit).toBe(true);
    plan.disarm();
    // The platform redelivers chunk 2's message: its chunk has moved on, so it runs chunk 3, not chunk 2 again.
    for (let i = 0; i < 5 && f.imports.held.length > 0; i++) await f.imports.deliverOnce(f.env);
    const done = (await request(f, "GET", `/v1/imports/${id}`, { token: owner.token })).body.data;
    expect(done).toMatchObject({ status: "completed", processed: 1_100, created: 1_100, updated: 0, skipped: 0, failed: 0 });
    expect(await total(owner.token)).toBe(1_100);
    expect((await contactsOf(owner.organizationId)).length).toBe(1_100);
    await expectDerivedFiguresExact(owner.organizationId);
  });
});
