import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { strFromU8, unzipSync } from "fflate";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { EXPORTED_TABLES } from "../../src/exports/archive";
import { openDownload } from "../../src/exports/service";
import { expireExportArchives } from "../../src/exports/retention";
import { mailTo } from "../helpers/documents";
import { createApiKey } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, listAll } from "../helpers/contacts";
import { createDeal, documentForm, PDF_BYTES } from "../helpers/deals";
import { csvObjects, ndjsonObjects, seedContacts } from "../helpers/exports";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { createProperty } from "../helpers/properties";
import { createSurveyTemplate, scheduleSurvey } from "../helpers/surveys";
import { flatten } from "../../src/crm/export";
import worker from "../../src/index";

const N = 3_000;
let org: TestPrincipal;
let other: TestPrincipal;

beforeAll(async () => {
  org = await createPrincipal();
  other = await createPrincipal();
  await seedContacts(org.organizationId, N);
  await seedContacts(other.organizationId, 50, "Other");
});

const exported = async (token: string, path: string) => {
  const res = await call("GET", path, { token });
  expect(res.status, res.status === 200 ? "" : await res.clone().text()).toBe(200);
  return { res, text: await res.text() };
};

/** Every page of a list route, walked with the largest page. */
async function walk(token: string, path: string, query = ""): Promise<Record<string, any>[]> {
  const all: Record<string, any>[] = [];
  let cursor: string | null = null;
  do {
    const q: string = [query, "limit=100", cursor ? `cursor=${encodeURIComponent(cursor)}` : ""].filter(Boolean).join("&");
    const body: { data: Record<string, any>[]; pagination: { nextCursor: string | null } } = await json(
      await call("GET", `${path}?${q}`, { token }),
    );
    all.push(...body.data);
    cursor = body.pagination.nextCursor;
  } while (cursor);
  return all;
}

/** An API object as the CSV writes it: every value a string, lists joined, nested objects dotted. */
const asCsv = (o: object) => flatten(o);

describe("GET /v1/contacts/export", () => {
  it("streams every contact as NDJSON, equal to the list walked page by page, in the list's order", async () => {
    const { res, text } = await exported(org.token, "/v1/contacts/export?format=ndjson");
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="contacts-\d{4}-\d{2}-\d{2}\.ndjson"$/);
    const rows = ndjsonObjects(text);
    expect(rows).toHaveLength(N);
    const { contacts } = await listAll(org.token, "limit=100");
    expect(rows).toEqual(contacts);
  });

  // Second adversarial pass: a custom field set only on rows past the first page (a field added lately, exported
  // oldest first) had no column, and its values were dropped.
  it("gives every defined custom field a CSV column, also one whose first value comes after the first page", async () => {
    const p = await createPrincipal();
    await seedContacts(p.organizationId, 600, "Late");
    expect(
      (
        await call("POST", "/v1/custom-fields", {
          token: p.token,
          body: { object: "contact", key: "late_score", label: "Late score", type: "number" },
        })
      ).status,
    ).toBe(201);
    const newest = await createContact(p.token, { customFields: { late_score: 42 } });
    // Oldest first: the one value is on the last page.
    const rows = csvObjects((await exported(p.token, "/v1/contacts/export?format=csv&sort=createdAt:asc")).text);
    expect(rows).toHaveLength(601);
    expect(rows.at(-1)).toMatchObject({ id: newest.id, "customFields.late_score": "42" });
    expect(rows[0]).toHaveProperty("customFields.late_score", "");
  });

  it("streams CSV with a header of dotted columns; read back, the rows equal the list's objects", async () => {
    const { res, text } = await exported(org.token, "/v1/contacts/export?format=csv");
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/filename="contacts-.*\.csv"/);
    const rows = csvObjects(text);
    expect(rows).toHaveLength(N);
    const header = Object.keys(rows[0]!);
    expect(header).toEqual(
      expect.arrayContaining(["id", "firstName", "email", "address.street", "address.city", "tags", "notes", "preferences"]),
    );
    const { contacts } = await listAll(org.token, "limit=100");
    // The first row has no address (n = 2999 is odd), yet the address columns are there: they come from the schema.
    const expected = contacts.map((c) => {
      const flat = asCsv(c);
      // No value is lost: every field of the object is a column (a null object stands for its dotted columns).
      for (const key of Object.keys(flat)) expect(header.some((h) => h === key || h.startsWith(`${key}.`))).toBe(true);
      return Object.fromEntries(header.map((h) => [h, flat[h] ?? ""]));
    });
    expect(rows).toEqual(expected);
    // A note with a comma and quotes survives the round trip.
    expect(rows.find((r) => r.notes!.includes('"soon"'))!.notes).toMatch(/^Called about Elm \d+, said "soon"$/);
  });

  it("applies the list's filters and q, and holds no other organization's contact", async () => {
    const query = "type=LEAD&tags=vip&sort=lastName:asc";
    const rows = ndjsonObjects((await exported(org.token, `/v1/contacts/export?format=ndjson&${query}`)).text);
    const listed = await walk(org.token, "/v1/contacts", query);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows).toEqual(listed);
    expect(rows.every((c) => c.type === "LEAD" && c.tags.includes("vip"))).toBe(true);

    const searched = ndjsonObjects((await exported(org.token, "/v1/contacts/export?format=ndjson&q=Seed12")).text);
    expect(searched.map((c) => c.id)).toEqual((await walk(org.token, "/v1/contacts", "q=Seed12")).map((c) => c.id));
    expect(searched.length).toBeGreaterThan(0);

    const all = ndjsonObjects((await exported(org.token, "/v1/contacts/export?format=ndjson")).text);
    expect(all.some((c) => c.firstName.startsWith("Other"))).toBe(false);
    const theirs = ndjsonObjects((await exported(other.token, "/v1/contacts/export?format=ndjson")).text);
    expect(theirs).toHaveLength(50);
    expect(theirs.every((c) => c.organizationId === other.organizationId)).toBe(true);
  });

  it("projects with fields, and refuses bad input with every problem listed", async () => {
    const rows = csvObjects((await exported(org.token, "/v1/contacts/export?fields=firstName,email&type=CLIENT")).text);
    expect(Object.keys(rows[0]!)).toEqual(["id", "firstName", "email"]);
    const errors = await expectCrmError(
      await call("GET", "/v1/contacts/export?format=xml&limit=5&type=NOPE", { token: org.token }),
      422,
      "validation_error",
    );
    expect(errors.map((e) => e.field).sort()).toEqual(["format", "limit", "type"]);
    const range = await expectCrmError(
      await call("GET", "/v1/contacts/export?leadScore[gte]=9&leadScore[lte]=2", { token: org.token }),
      422,
      "validation_error",
    );
    expect(range.map((e) => `${e.field}:${e.code}`)).toEqual(["leadScore[gte]:invalid_range"]);
  });

  it("is not taken for a contact id, and an empty selection is a header alone", async () => {
    const res = await call("GET", "/v1/contacts/export?type=VENDOR&email=nobody@nowhere.test", { token: org.token });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.split("\r\n").filter(Boolean)).toHaveLength(1);
    expect(text.startsWith("id,")).toBe(true);
  });

  it("403 insufficient_permission for a key without exports:read, even with contacts:read", async () => {
    const key = await createApiKey(org.token, ["contacts:read"]);
    const errors = await call("GET", "/v1/contacts/export", { token: key.key });
    expect(errors.status).toBe(403);
    expect((await json(errors)).error.code).toBe("insufficient_permission");
    // exports:read alone does not read contacts either.
    const exportsOnly = await createApiKey(org.token, ["exports:read"]);
    const refused = await call("GET", "/v1/contacts/export?format=ndjson&type=LEAD", { token: exportsOnly.key });
    expect(refused.status).toBe(403);
    expect((await json(refused)).error.code).toBe("insufficient_permission");
    expect((await call("GET", "/v1/deals/export", { token: exportsOnly.key })).status).toBe(403);
    const allowed = await createApiKey(org.token, ["exports:read", "contacts:read"]);
    expect((await call("GET", "/v1/contacts/export?format=ndjson&type=LEAD", { token: allowed.key })).status).toBe(200);
  });
});

describe("custom fields in exports (issue 33 part 6)", () => {
  it("exports each custom field as a column, filtered and sorted by them like the list", async () => {
    const p = await createPrincipal();
    for (const [key, type, options] of [
      ["budget", "number"],
      ["moving", "date"],
      ["preapproved", "boolean"],
      ["side", "select", ["buyer", "seller"]],
      ["note", "text"],
    ] as const) {
      expect(
        (
          await call("POST", "/v1/custom-fields", {
            token: p.token,
            body: { object: "contact", key, label: key, type, ...(options ? { options } : {}) },
          })
        ).status,
      ).toBe(201);
    }
    const rich = await createContact(p.token, {
      customFields: { budget: 750000, moving: "2027-03-01", preapproved: true, side: "buyer", note: "=cmd" },
    });
    const modest = await createContact(p.token, { customFields: { budget: 300000, side: "seller" } });
    await createContact(p.token, {});
    const query = "customFields.budget[gte]=250000&sort=customFields.budget:desc";
    const listed = await walk(p.token, "/v1/contacts", query);
    expect(listed.map((c) => c.id)).toEqual([rich.id, modest.id]);
    const rows = csvObjects((await exported(p.token, `/v1/contacts/export?format=csv&${query}`)).text);
    expect(rows.map((r) => r.id)).toEqual([rich.id, modest.id]);
    expect(rows[0]).toMatchObject({
      "customFields.budget": "750000",
      "customFields.moving": "2027-03-01",
      "customFields.preapproved": "true",
      "customFields.side": "buyer",
      "customFields.note": "'=cmd",
    });
    expect(rows[1]).toMatchObject({ "customFields.budget": "300000", "customFields.side": "seller", "customFields.moving": "" });
    const lines = ndjsonObjects((await exported(p.token, `/v1/contacts/export?format=ndjson&${query}`)).text);
    expect(lines.map((c) => c.customFields)).toEqual([rich.customFields, modest.customFields]);
    const bad = await call("GET", "/v1/contacts/export?customFields.nope=1", { token: p.token });
    expect(bad.status).toBe(422);
  });
});

describe("GET /v1/deals/export and /v1/properties/export", () => {
  let owner: TestPrincipal;
  beforeAll(async () => {
    owner = await createPrincipal();
    const contact = await createContact(owner.token);
    for (let i = 0; i < 6; i++) await createDeal(owner.token, { contactId: contact.id, title: `Deal ${i}`, amount: 100_000 + i * 1000 });
    for (let i = 0; i < 4; i++) await createProperty(owner.token, { listing: { listPrice: 300_000 + i * 50_000 } });
  });

  it("exports deals equal to the list, with the list's filters", async () => {
    const rows = ndjsonObjects((await exported(owner.token, "/v1/deals/export?format=ndjson")).text);
    expect(rows).toEqual(await walk(owner.token, "/v1/deals"));
    expect(rows).toHaveLength(6);
    const filtered = ndjsonObjects((await exported(owner.token, "/v1/deals/export?format=ndjson&amount[gte]=103000")).text);
    expect(filtered.map((d) => d.title).sort()).toEqual(["Deal 3", "Deal 4", "Deal 5"]);
    const csv = csvObjects((await exported(owner.token, "/v1/deals/export")).text);
    expect(csv.map((d) => d.id)).toEqual(rows.map((d) => d.id));
    expect(csv[0]!.amount).toBe(String(rows[0]!.amount));
    expect(ndjsonObjects((await exported(other.token, "/v1/deals/export?format=ndjson")).text)).toEqual([]);
  });

  it("exports properties equal to the list (CSV columns dotted from the nested objects)", async () => {
    const rows = ndjsonObjects((await exported(owner.token, "/v1/properties/export?format=ndjson&sort=listPrice:asc")).text);
    const listed = await walk(owner.token, "/v1/properties", "sort=listPrice:asc");
    expect(rows.map((p) => p.id)).toEqual(listed.map((p) => p.id));
    expect(rows).toHaveLength(4);
    const csv = csvObjects((await exported(owner.token, "/v1/properties/export?sort=listPrice:asc")).text);
    expect(Object.keys(csv[0]!)).toEqual(expect.arrayContaining(["id", "address.street", "address.city"]));
    expect(csv.map((p) => p["address.street"])).toEqual(rows.map((p) => p.address.street));
  });
});

/** Polls the job until it leaves queued/running (the real queue consumer runs it). */
async function settled(token: string, id: string): Promise<Record<string, any>> {
  for (let i = 0; i < 300; i++) {
    const body = await json(await call("GET", `/v1/organization/exports/${id}`, { token }));
    if (!["queued", "running"].includes(body.data.status)) return body.data;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the export job did not finish");
}

describe("POST /v1/organization/export", () => {
  let owner: TestPrincipal;
  let exportId: string;
  let link: string;
  let dealId: string;
  const SEALED = new TextEncoder().encode("%PDF-1.7 sealed copy of a completed envelope\n%%EOF\n");

  beforeAll(async () => {
    owner = await createPrincipal();
    await seedContacts(owner.organizationId, 1200, "Zip");
    const contact = await createContact(owner.token, { firstName: "Ada", lastName: "Archive" });
    dealId = (await createDeal(owner.token, { contactId: contact.id, title: "Archived deal" })).id;
    const uploaded = await call("POST", `/v1/deals/${dealId}/documents`, { token: owner.token, body: documentForm(PDF_BYTES) });
    expect(uploaded.status).toBe(201);
    // The sealed PDF of a completed envelope, where the sealing consumer writes it (signatures/sealing.ts).
    await env.FILES.put(`signed/${owner.organizationId}/env-1.pdf`, SEALED);
  });

  it("answers 202 with the job, writes one zip with every table and the files, and mails a link that works", async () => {
    const res = await call("POST", "/v1/organization/export", { token: owner.token });
    expect(res.status).toBe(202);
    const job = (await json(res)).data;
    expect(job).toMatchObject({ status: "queued", progress: { tablesDone: 0, rows: 0 }, expiresAt: null });
    expect(job.progress.tablesTotal).toBeGreaterThan(30);
    exportId = job.id;

    const done = await settled(owner.token, exportId);
    expect(done.status).toBe("completed");
    expect(done.progress.tablesDone).toBe(done.progress.tablesTotal);
    expect(done.progress.files).toBe(2);
    expect(Date.parse(done.expiresAt) - Date.parse(done.completedAt)).toBeGreaterThan(7 * 86_400_000 - 60_000);
    expect(Date.parse(done.expiresAt) - Date.parse(done.completedAt)).toBeLessThanOrEqual(7 * 86_400_000);

    const mails = await mailTo(`${owner.userId}@example.test`);
    const mailed = mails.find((m) => m.subject === "Your organization export is ready")!;
    link = mailed.text.match(/https?:\/\/\S+\/api\/public\/exports\/\S+/)![0];
    const download = await call("GET", new URL(link).pathname);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("application/zip");
    const files = unzipSync(new Uint8Array(await download.arrayBuffer()));
    const names = Object.keys(files);
    expect(names).toEqual(
      expect.arrayContaining([
        "README.txt",
        "tables/contacts.ndjson",
        "tables/deals.ndjson",
        "tables/deal_documents.ndjson",
        "tables/users.ndjson",
        "tables/organizations.ndjson",
      ]),
    );
    const contacts = ndjsonObjects(strFromU8(files["tables/contacts.ndjson"]!));
    expect(contacts).toHaveLength(1201);
    expect(contacts.every((c) => c.organizationId === owner.organizationId)).toBe(true);
    expect(contacts.find((c) => c.lastName === "Archive")).toMatchObject({ firstName: "Ada" });
    expect(ndjsonObjects(strFromU8(files["tables/deals.ndjson"]!)).map((d) => d.id)).toEqual([dealId]);
    // No other organization's row in any table.
    for (const name of names.filter((n) => n.startsWith("tables/"))) {
      const text = strFromU8(files[name]!);
      expect(text.includes(other.organizationId), name).toBe(false);
    }
    const document = names.find((n) => n.startsWith(`files/deals/${owner.organizationId}/${dealId}/`))!;
    expect(files[document]).toEqual(PDF_BYTES);
    expect(files[`files/signed/${owner.organizationId}/env-1.pdf`]).toEqual(SEALED);
    // The export's own link is stored as a hash only, and no credential column is in the archive.
    expect(strFromU8(files["tables/users.ndjson"]!)).not.toMatch(/tokenHash|secretCiphertext/);
  });

  it("holds no credential: a survey's token and a signing link's hash are left out", () => {
    expect(EXPORTED_TABLES.some((t) => t.name === "organization_exports" || t.name === "idempotency_keys")).toBe(false);
  });

  it("404s a wrong token, another organization's id, and the link once 7 days have passed", async () => {
    const path = new URL(link).pathname;
    const token = path.split("/").pop()!;
    expect((await call("GET", path.replace(token, `${token.slice(0, -2)}xx`))).status).toBe(404);
    expect((await call("GET", path.replace(owner.organizationId, other.organizationId))).status).toBe(404);
    // The clock 7 days and a second on: the link is dead (the service's own `now`), then the stored expiry passed.
    const db = await tenantDb(owner.organizationId);
    const ctx = { db: createDb(db), files: env.FILES };
    expect(await openDownload(ctx, owner.organizationId, token, new Date(Date.now() + 6 * 86_400_000))).not.toBeNull();
    expect(await openDownload(ctx, owner.organizationId, token, new Date(Date.now() + 7 * 86_400_000 + 1000))).toBeNull();
    await db
      .prepare("UPDATE organization_exports SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), exportId)
      .run();
    expect((await call("GET", path)).status).toBe(404);
  });

  it("is for owners and admins: an agent is refused (403 insufficient_role), a key without exports:read too; another org's job is a 404", async () => {
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    const refused = await call("POST", "/v1/organization/export", { token: agent.token });
    expect(refused.status).toBe(403);
    expect((await json(refused)).error.code).toBe("insufficient_role");
    const admin = await createPrincipal({ organizationId: owner.organizationId, role: "admin" });
    expect((await call("POST", "/v1/organization/export", { token: admin.token })).status).toBe(202);
    const key = await createApiKey(owner.token, ["organization:read", "organization:manage"]);
    const noExports = await call("POST", "/v1/organization/export", { token: key.key });
    expect(noExports.status).toBe(403);
    expect((await json(noExports)).error.code).toBe("insufficient_permission");
    expect((await call("GET", `/v1/organization/exports/${exportId}`, { token: other.token })).status).toBe(404);
  });
});

describe("organization exports: one at a time, and gone when the link is (issue 33)", () => {
  const start = (p: TestPrincipal) => call("POST", "/v1/organization/export", { token: p.token });
  /** Every export link mailed to the principal, oldest first. */
  const links = async (p: TestPrincipal) =>
    (await mailTo(`${p.userId}@example.test`))
      .filter((m) => m.subject === "Your organization export is ready")
      .map((m) => new URL(m.text.match(/https?:\/\/\S+\/api\/public\/exports\/\S+/)![0]).pathname);
  /** One pass of the Worker's scheduled handler (src/cron.ts: every task on every shard). */
  async function cronPass() {
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
  }

  it("two concurrent requests start one export: one 202, one 409 export_running naming it; a new one is accepted once it completed", async () => {
    const p = await createPrincipal();
    const answers = await Promise.all([start(p), start(p)]);
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409]);
    const accepted = answers.find((a) => a.status === 202)!;
    const refused = answers.find((a) => a.status === 409)!;
    const job = (await json(accepted)).data;
    expect((await json(refused.clone())).error.code).toBe("export_running");
    expect(await expectCrmError(refused, 409, "conflict_error")).toEqual([{ field: "exportId", code: "export_running", message: job.id }]);
    expect((await settled(p.token, job.id)).status).toBe("completed");
    const next = await start(p);
    expect(next.status).toBe(202);
    expect((await json(next)).data.id).not.toBe(job.id);
  });

  it("a job stalled in queued for a day stops holding the slot: the cron fails it and a new export is accepted", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    const id = crypto.randomUUID();
    const long = new Date(Date.now() - 2 * 86_400_000).toISOString();
    // Its queue message lost (deliveries used up while the organization moved): nothing will run it.
    await db
      .prepare("INSERT INTO organization_exports (id, organization_id, status, created_at, updated_at) VALUES (?, ?, 'queued', ?, ?)")
      .bind(id, p.organizationId, long, long)
      .run();
    const refused = await start(p);
    expect(await expectCrmError(refused, 409, "conflict_error")).toEqual([{ field: "exportId", code: "export_running", message: id }]);
    await cronPass();
    expect((await json(await call("GET", `/v1/organization/exports/${id}`, { token: p.token }))).data).toMatchObject({
      status: "failed",
      error: expect.any(String),
    });
    expect((await start(p)).status).toBe(202);
  });

  it("the cron deletes the zip of an export whose link expired and shows it expired; the link answers as unknown; an unexpired export is untouched", async () => {
    const p = await createPrincipal();
    const first = (await json(await start(p))).data;
    expect((await settled(p.token, first.id)).status).toBe("completed");
    const second = (await json(await start(p))).data;
    expect((await settled(p.token, second.id)).status).toBe("completed");
    // Each link is mailed just after its job shows completed.
    let mailed: string[] = [];
    await vi.waitFor(async () => expect((mailed = await links(p))).toHaveLength(2));
    const [oldLink, newLink] = mailed;
    const key = (id: string) => `exports/${p.organizationId}/${id}.zip`;
    expect(await env.FILES.head(key(first.id))).not.toBeNull();
    // A wrong token, as the download answers it: what an expired link must answer too.
    const token = oldLink!.split("/").pop()!;
    const unknown = await call("GET", oldLink!.replace(token, `${token.slice(0, -2)}xx`));
    expect(unknown.status).toBe(404);
    const unknownBody = await unknown.text();

    const db = await tenantDb(p.organizationId);
    await db
      .prepare("UPDATE organization_exports SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), first.id)
      .run();
    // R2 refusing the delete: the job is left completed, for the next pass to retry.
    const failing = { ...env, FILES: { delete: () => Promise.reject(new Error("R2 is unavailable")) } } as unknown as typeof env;
    await expect(expireExportArchives(failing, createDb(db))).rejects.toThrow("R2 is unavailable");
    expect((await json(await call("GET", `/v1/organization/exports/${first.id}`, { token: p.token }))).data.status).toBe("completed");
    await cronPass();

    expect(await env.FILES.head(key(first.id))).toBeNull();
    const expired = (await json(await call("GET", `/v1/organization/exports/${first.id}`, { token: p.token }))).data;
    expect(expired.status).toBe("expired");
    const row = await db.prepare("SELECT object_key, token_hash FROM organization_exports WHERE id = ?").bind(first.id).first();
    expect(row).toEqual({ object_key: null, token_hash: null });
    const dead = await call("GET", oldLink!);
    expect(dead.status).toBe(404);
    expect(await dead.text()).toBe(unknownBody);

    // The export whose link lives: its zip and its link as they were.
    expect(await env.FILES.head(key(second.id))).not.toBeNull();
    expect((await json(await call("GET", `/v1/organization/exports/${second.id}`, { token: p.token }))).data.status).toBe("completed");
    const download = await call("GET", newLink!);
    expect(download.status).toBe(200);
    expect(Object.keys(unzipSync(new Uint8Array(await download.arrayBuffer())))).toContain("README.txt");
  });
});

describe("GET /v1/contacts/{id}/export (the right of access)", () => {
  it("answers everything held about the person, found where an erasure would look, and nothing of others", async () => {
    const p = await createPrincipal();
    const email = `ines.${crypto.randomUUID().slice(0, 8)}@access.test`;
    const contact = await createContact(p.token, { firstName: "Ines", lastName: "Accessley", email, phone: "+1 416 555 0199" });
    const someone = await createContact(p.token, { firstName: "Other", lastName: "Person" });
    expect(
      (await call("POST", `/v1/contacts/${contact.id}/activities`, { token: p.token, body: { type: "NOTE", description: "Likes Elm St" } }))
        .status,
    ).toBe(201);
    expect(
      (
        await call("POST", `/v1/contacts/${contact.id}/communications`, {
          token: p.token,
          body: { type: "email", direction: "outbound", subject: "Hello Ines" },
        })
      ).status,
    ).toBe(201);
    const deal = await createDeal(p.token, { contactId: contact.id, title: "Ines buys" });
    await createDeal(p.token, { contactId: someone.id, title: "Not hers" });
    const referral = await call("POST", "/api/reputation/referrals", {
      token: p.token,
      body: { agentUserId: p.userId, referredName: "Ines Accessley", referredContact: "(416) 555-0199" },
    });
    expect(referral.status).toBe(201);

    const res = await call("GET", `/v1/contacts/${contact.id}/export`, { token: p.token });
    expect(res.status).toBe(200);
    const data = (await json(res)).data;
    expect(data.contact).toMatchObject({ id: contact.id, email, inTrash: false });
    expect(data.activities.map((a: any) => a.description)).toEqual(["Likes Elm St"]);
    expect(data.communications.map((c: any) => c.subject)).toEqual(["Hello Ines"]);
    expect(data.deals.map((d: any) => d.id)).toEqual([deal.id]);
    // Referred by phone written another way: the erasure's own lookup finds it.
    expect(data.referrals).toHaveLength(1);
    expect(JSON.stringify(data)).not.toContain(someone.id);

    // In the trash still held, and answered; another organization's id and an unknown one alike 404.
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    const trashed = (await json(await call("GET", `/v1/contacts/${contact.id}/export`, { token: p.token }))).data;
    expect(trashed.contact).toMatchObject({ id: contact.id, inTrash: true });
    await expectCrmError(await call("GET", `/v1/contacts/${contact.id}/export`, { token: other.token }), 404, "not_found_error");
    await expectCrmError(
      await call("GET", "/v1/contacts/00000000-0000-4000-8000-00000000dead/export", { token: p.token }),
      404,
      "not_found_error",
    );
    for (const permissions of [["contacts:read"], ["exports:read"]]) {
      const key = await createApiKey(p.token, permissions);
      expect((await call("GET", `/v1/contacts/${someone.id}/export`, { token: key.key })).status).toBe(403);
    }
  });

  // Issue 40: with exports:read + contacts:read (403 on /v1/deals) the export answered the person's full deal rows
  // (amount, notes, commission), and their referrals, surveys, documents and envelopes by the same code.
  it("includes another domain's part only with that domain's read permission, and names what it left out", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, {
      firstName: "Nadia",
      lastName: "Narrowkey",
      email: `nadia.${crypto.randomUUID().slice(0, 8)}@access.test`,
      phone: "+1 416 555 0142",
    });
    const deal = await createDeal(p.token, { contactId: contact.id, title: "Nadia's secret deal" });
    const referral = await call("POST", "/api/reputation/referrals", {
      token: p.token,
      body: { agentUserId: p.userId, referredName: "Nadia Narrowkey", referredContact: "(416) 555-0142" },
    });
    expect(referral.status).toBe(201);
    const everything = [
      "mails",
      "deals",
      "testimonials",
      "referrals",
      "surveys",
      "surveyResponses",
      "clickwrapAcceptances",
      "documents",
      "envelopes",
      "tasks",
      "appointments",
    ];

    const narrow = await createApiKey(p.token, ["exports:read", "contacts:read"]);
    expect((await call("GET", "/v1/deals", { token: narrow.key })).status).toBe(403);
    const res = await call("GET", `/v1/contacts/${contact.id}/export`, { token: narrow.key });
    expect(res.status).toBe(200);
    const data = (await json(res)).data;
    expect(data.contact).toMatchObject({ id: contact.id });
    expect(data.omitted).toEqual(everything);
    for (const part of everything) expect(data, part).not.toHaveProperty(part);
    expect(JSON.stringify(data)).not.toContain(deal.id);
    expect(JSON.stringify(data)).not.toContain("secret deal");

    const withDeals = await createApiKey(p.token, ["exports:read", "contacts:read", "deals:read"]);
    const some = (await json(await call("GET", `/v1/contacts/${contact.id}/export`, { token: withDeals.key }))).data;
    expect(some.deals.map((d: any) => d.id)).toEqual([deal.id]);
    expect(some.omitted).toEqual(everything.filter((p) => p !== "deals"));
    expect(some).not.toHaveProperty("referrals");

    // Hundreds of surveys (second adversarial pass: past 100 the answers' lookup bound one value each, a 500).
    await createSurveyTemplate(p);
    const survey = await scheduleSurvey(p, { recipientPersonId: contact.id });
    const shard = await tenantDb(p.organizationId);
    const columns = (await shard.prepare("SELECT name FROM pragma_table_info('surveys')").all<{ name: string }>()).results.map(
      (c) => c.name,
    );
    const fresh: Record<string, string> = { id: "lower(hex(randomblob(16)))", access_token_hash: "lower(hex(randomblob(32)))" };
    await shard
      .prepare(
        `INSERT INTO surveys (${columns.join(", ")}) WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 120) SELECT ${columns.map((c) => fresh[c] ?? `t.${c}`).join(", ")} FROM seq CROSS JOIN surveys t WHERE t.id = ?`,
      )
      .bind(survey.id)
      .run();
    const many = await call("GET", `/v1/contacts/${contact.id}/export`, { token: p.token });
    expect(many.status).toBe(200);
    expect((await json(many)).data.surveys).toHaveLength(121);

    // Every permission: complete, nothing omitted.
    const full = (await json(await call("GET", `/v1/contacts/${contact.id}/export`, { token: p.token }))).data;
    expect(full.omitted).toEqual([]);
    for (const part of everything) expect(full, part).toHaveProperty(part);
    expect(full.referrals).toHaveLength(1);
  });
});
