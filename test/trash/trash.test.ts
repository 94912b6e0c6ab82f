import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import type { Env } from "../../src/env";
import { purgeTrash } from "../../src/trash/service";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, getContact, logActivity, uniqueEmail } from "../helpers/contacts";
import { createDeal, createTask, documentForm, getDeal, updateDeal } from "../helpers/deals";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { createProperty, photoForm, PNG_1X1 } from "../helpers/properties";
import { createSurveyTemplate } from "../helpers/surveys";

type Row = Record<string, unknown>;

/** Every row of `table` matching `where` on `p`'s shard, in a stable order: what "equal to before" compares. */
async function rowsOf(p: TestPrincipal, table: string, where: string, ...binds: unknown[]): Promise<Row[]> {
  const { results } = await (await tenantDb(p.organizationId))
    .prepare(`SELECT * FROM ${table} WHERE ${where} ORDER BY 1`)
    .bind(...binds)
    .all<Row>();
  return results;
}

/** R2 objects under a prefix with their bytes, as hex. */
async function filesUnder(prefix: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const o of (await env.FILES.list({ prefix })).objects) {
    const body = await env.FILES.get(o.key);
    out[o.key] = [...new Uint8Array(await body!.arrayBuffer())].map((b) => b.toString(16).padStart(2, "0")).join("");
  }
  return out;
}

const del = (p: TestPrincipal, path: string) => call("DELETE", path, { token: p.token });
const restore = (p: TestPrincipal, path: string) => call("POST", `${path}/restore`, { token: p.token });
const total = async (p: TestPrincipal, list: string) =>
  (await json(await call("GET", `${list}?limit=1`, { token: p.token }))).pagination.total as number;
const trashList = async (p: TestPrincipal, query = "") => json(await call("GET", `/v1/trash${query}`, { token: p.token }));

/** Moves a trash entry's restore deadline into the past, as 30 days would. */
const age = async (p: TestPrincipal, id: string) =>
  (await tenantDb(p.organizationId))
    .prepare("UPDATE trash_entries SET restorable_until = ? WHERE record_id = ?")
    .bind(new Date(Date.now() - 1000).toISOString(), id)
    .run();
const entryOf = async (p: TestPrincipal, id: string) =>
  (await tenantDb(p.organizationId)).prepare("SELECT * FROM trash_entries WHERE record_id = ?").bind(id).first<Row>();
const keptRows = async (p: TestPrincipal, id: string) =>
  (await (
    await tenantDb(p.organizationId)
  )
    .prepare("SELECT COUNT(*) AS n FROM trash_rows WHERE record_id = ?")
    .bind(id)
    .first<{ n: number }>())!.n;

async function contactState(p: TestPrincipal, id: string) {
  return {
    contact: await rowsOf(p, "contacts", "id = ?", id),
    activities: await rowsOf(p, "contact_activities", "contact_id = ?", id),
    tags: await rowsOf(p, "contact_tags", "contact_id = ?", id),
    // The organization's tag catalogue is derived (a tag nobody carries leaves it): name, color and count come back.
    tagCounts: (await rowsOf(p, "tags", "organization_id = ?", p.organizationId)).map(({ created_at: _, ...t }) => t),
  };
}

async function dealState(p: TestPrincipal, id: string) {
  return {
    deal: await rowsOf(p, "deals", "id = ?", id),
    tasks: await rowsOf(p, "tasks", "deal_id = ?", id),
    documents: await rowsOf(p, "deal_documents", "deal_id = ?", id),
    activities: await rowsOf(p, "deal_activities", "deal_id = ?", id),
    history: await rowsOf(p, "deal_stage_changes", "deal_id = ?", id),
    pipeline: await rowsOf(p, "deal_stage_stats", "organization_id = ?", p.organizationId),
    files: await filesUnder(`deals/${p.organizationId}/${id}/`),
  };
}

async function propertyState(p: TestPrincipal, id: string) {
  return {
    property: await rowsOf(p, "properties", "id = ?", id),
    stats: await rowsOf(p, "property_stats", "property_id = ?", id),
    daily: await rowsOf(p, "property_daily_stats", "property_id = ?", id),
    visitors: await rowsOf(p, "property_daily_visitors", "property_id = ?", id),
    referrers: await rowsOf(p, "property_daily_referrers", "property_id = ?", id),
    files: await filesUnder(`properties/${p.organizationId}/${id}/`),
  };
}

describe("trash and restore", () => {
  it("a deleted contact leaves reads, lists and totals, waits in the trash, and comes back row for row", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, {
      tags: ["vip", "buyer"],
      phone: "+1 416 555 0100",
      address: { city: "Toronto" },
      leadScore: 40,
    });
    await logActivity(p.token, contact.id, { type: "PHONE_CALL", description: "first call" });
    await logActivity(p.token, contact.id, { type: "EMAIL_SENT", description: "follow-up" });
    const before = await contactState(p, contact.id);
    const shownBefore = await getContact(p.token, contact.id);
    const totalBefore = await total(p, "/v1/contacts");

    expect((await del(p, `/v1/contacts/${contact.id}`)).status).toBe(200);
    expect((await call("GET", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(404);
    expect(await total(p, "/v1/contacts")).toBe(totalBefore - 1);
    const gone = await contactState(p, contact.id);
    expect(gone.contact).toEqual([]);
    expect(gone.activities).toEqual([]);
    expect(gone.tagCounts).toEqual([]);
    const listed = await trashList(p);
    expect(listed.data).toEqual([
      expect.objectContaining({ id: contact.id, kind: "contact", label: `${contact.firstName} ${contact.lastName}`, deletedBy: p.userId }),
    ]);
    expect(listed.pagination.total).toBe(1);

    const res = await restore(p, `/v1/contacts/${contact.id}`);
    expect(res.status).toBe(200);
    expect((await json(res)).data).toEqual(shownBefore);
    expect(res.headers.get("etag")).toBe(`"${before.contact[0]!.version}"`);
    expect(await contactState(p, contact.id)).toEqual(before);
    expect(await getContact(p.token, contact.id)).toEqual(shownBefore);
    expect(await total(p, "/v1/contacts")).toBe(totalBefore);
    expect((await trashList(p)).data).toEqual([]);
    expect(await keptRows(p, contact.id)).toBe(0);
    // Restored once: a second restore finds nothing in the trash.
    await expectCrmError(await restore(p, `/v1/contacts/${contact.id}`), 404, "not_found_error");
  });

  it("a deleted deal keeps its tasks, documents (R2 included), activities and history for its restore", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token, { amount: 700000 });
    await createTask(p.token, deal.id, { title: "Inspection" });
    const up = await call("POST", `/v1/deals/${deal.id}/documents`, { token: p.token, body: documentForm() });
    expect(up.status).toBe(201);
    await call("POST", `/v1/deals/${deal.id}/move`, { token: p.token, body: { stage: "QUALIFIED" } });
    const before = await dealState(p, deal.id);
    expect(Object.keys(before.files)).toHaveLength(1);
    const pipelineBefore = (await json(await call("GET", "/v1/deals/pipeline", { token: p.token }))).data;

    expect((await del(p, `/v1/deals/${deal.id}`)).status).toBe(200);
    expect((await call("GET", `/v1/deals/${deal.id}`, { token: p.token })).status).toBe(404);
    expect(await total(p, "/v1/deals")).toBe(0);
    expect((await json(await call("GET", "/v1/deals/pipeline", { token: p.token }))).data.totalDeals).toBe(0);
    // The files wait in R2 for a restore.
    expect((await dealState(p, deal.id)).files).toEqual(before.files);

    expect((await restore(p, `/v1/deals/${deal.id}`)).status).toBe(200);
    expect(await dealState(p, deal.id)).toEqual(before);
    expect((await json(await call("GET", "/v1/deals/pipeline", { token: p.token }))).data).toEqual(pipelineBefore);
  });

  it("a deleted property keeps its photos (R2 included) and figures for its restore", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    expect(
      (await call("POST", `/v1/properties/${property.id}/photos`, { token: p.token, body: photoForm([{ bytes: PNG_1X1 }]) })).status,
    ).toBe(201);
    const before = await propertyState(p, property.id);
    expect(Object.keys(before.files)).toHaveLength(1);

    expect((await del(p, `/v1/properties/${property.id}`)).status).toBe(200);
    expect((await call("GET", `/v1/properties/${property.id}`, { token: p.token })).status).toBe(404);
    expect(await total(p, "/v1/properties")).toBe(0);
    expect((await trashList(p, "?kind=property")).data.map((i: Row) => i.id)).toEqual([property.id]);
    expect((await trashList(p, "?kind=deal")).data).toEqual([]);

    expect((await restore(p, `/v1/properties/${property.id}`)).status).toBe(200);
    expect(await propertyState(p, property.id)).toEqual(before);
    expect(await total(p, "/v1/properties")).toBe(1);
  });

  it("the trash list pages newest first and is the caller's organization's only", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const c = await createContact(p.token);
      expect((await del(p, `/v1/contacts/${c.id}`)).status).toBe(200);
      ids.unshift(c.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await trashList(p, `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      seen.push(...page.data.map((i: Row) => i.id as string));
      cursor = page.pagination.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids);
    expect((await trashList(other)).data).toEqual([]);
    await expectCrmError(await restore(other, `/v1/contacts/${ids[0]}`), 404, "not_found_error");
    await expectCrmError(await call("GET", "/v1/trash?kind=plant", { token: p.token }), 422, "validation_error");
  });

  it("restoring a contact whose e-mail another contact took since answers 409 and restores nothing", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail();
    const first = await createContact(p.token, { email });
    expect((await del(p, `/v1/contacts/${first.id}`)).status).toBe(200);
    await createContact(p.token, { email });
    await expectCrmError(await restore(p, `/v1/contacts/${first.id}`), 409, "conflict_error");
    expect((await trashList(p)).data.map((i: Row) => i.id)).toEqual([first.id]);
    expect(await total(p, "/v1/contacts")).toBe(1);
  });

  it("the purge removes what outlived its 30 days, files included, and leaves a tombstone that references show", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const deal = await createDeal(p.token, { contactId: contact.id });
    const property = await createProperty(p.token);
    expect(
      (await call("POST", `/v1/properties/${property.id}/photos`, { token: p.token, body: photoForm([{ bytes: PNG_1X1 }]) })).status,
    ).toBe(201);
    await updateDeal(p.token, deal.id, { propertyId: property.id });
    const prefix = `properties/${p.organizationId}/${property.id}/`;
    expect(Object.keys(await filesUnder(prefix))).toHaveLength(1);

    expect((await del(p, `/v1/contacts/${contact.id}`)).status).toBe(200);
    expect((await del(p, `/v1/properties/${property.id}`)).status).toBe(200);
    const deletedAt = (await entryOf(p, contact.id))!.deleted_at;
    // In the trash: the deal still names both, shown as deleted.
    const shown = await getDeal(p.token, deal.id, "?include=contact,property");
    expect(shown.contact).toEqual({ id: contact.id, deleted: true, deletedAt });
    expect(shown.property).toMatchObject({ id: property.id, deleted: true });

    await age(p, contact.id);
    await age(p, property.id);
    // Past its days, before the purge ran: no longer restorable.
    await expectCrmError(await restore(p, `/v1/contacts/${contact.id}`), 404, "not_found_error");
    expect(await purgeTrash(env, createDb(await tenantDb(p.organizationId)))).toBeGreaterThanOrEqual(2);

    for (const id of [contact.id, property.id]) {
      expect(await entryOf(p, id)).toMatchObject({ record_id: id, state: "purged", label: null, deleted_by: null });
      expect(await keptRows(p, id)).toBe(0);
    }
    expect(await filesUnder(prefix)).toEqual({});
    expect((await getDeal(p.token, deal.id, "?include=contact")).contact).toEqual({ id: contact.id, deleted: true, deletedAt });
    await expectCrmError(await restore(p, `/v1/properties/${property.id}`), 404, "not_found_error");
    expect((await trashList(p)).data).toEqual([]);
    // A second pass finds nothing left to do.
    await purgeTrash(env, createDb(await tenantDb(p.organizationId)));
    expect(await entryOf(p, contact.id)).toMatchObject({ state: "purged" });
  });

  it("a purge that stopped half-way is resumed by the next pass", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    expect(
      (await call("POST", `/v1/properties/${property.id}/photos`, { token: p.token, body: photoForm([{ bytes: PNG_1X1 }]) })).status,
    ).toBe(201);
    expect((await del(p, `/v1/properties/${property.id}`)).status).toBe(200);
    await age(p, property.id);
    const failing = {
      ...env,
      FILES: {
        ...env.FILES,
        list: () => Promise.reject(new Error("R2 unavailable")),
        delete: () => Promise.reject(new Error("R2 unavailable")),
      },
    } as unknown as Env;
    await purgeTrash(failing, createDb(await tenantDb(p.organizationId)));
    expect(await entryOf(p, property.id)).toMatchObject({ state: "purging" });
    expect(await keptRows(p, property.id)).toBeGreaterThan(0);
    await expectCrmError(await restore(p, `/v1/properties/${property.id}`), 404, "not_found_error");

    await purgeTrash(env, createDb(await tenantDb(p.organizationId)));
    expect(await entryOf(p, property.id)).toMatchObject({ state: "purged" });
    expect(await keptRows(p, property.id)).toBe(0);
    expect(await filesUnder(`properties/${p.organizationId}/${property.id}/`)).toEqual({});
  });
});

describe("references that hold", () => {
  it("a write that sets a reference to a trashed contact or property is a 422 naming the field", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const property = await createProperty(p.token);
    expect((await del(p, `/v1/contacts/${contact.id}`)).status).toBe(200);
    expect((await del(p, `/v1/properties/${property.id}`)).status).toBe(200);
    const res = await call("POST", "/v1/deals", {
      token: p.token,
      body: { title: "x", type: "PURCHASE", amount: 1, contactId: contact.id, propertyId: property.id },
    });
    const issues = await expectCrmError(res, 422, "validation_error");
    expect(issues.map((i) => `${i.field}:${i.code}`).sort()).toEqual(["contactId:invalid_reference", "propertyId:invalid_reference"]);
    expect(await total(p, "/v1/deals")).toBe(0);
  });

  it("a reference kept as it was stays valid after its target was deleted, and restore makes it whole", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const contact = await getContact(p.token, deal.contactId);
    expect((await del(p, `/v1/contacts/${deal.contactId}`)).status).toBe(200);

    // The deal sent back as read, its contactId unchanged: saved.
    const read = await getDeal(p.token, deal.id);
    const saved = await updateDeal(p.token, deal.id, { ...read, title: "Renamed" });
    expect(saved).toMatchObject({ title: "Renamed", contactId: deal.contactId });
    // Changing it to another trashed target is refused; to a live one is fine.
    const other = await createContact(p.token);
    expect((await del(p, `/v1/contacts/${other.id}`)).status).toBe(200);
    await expectCrmError(
      await call("PUT", `/v1/deals/${deal.id}`, { token: p.token, body: { contactId: other.id } }),
      422,
      "validation_error",
    );

    expect((await restore(p, `/v1/contacts/${deal.contactId}`)).status).toBe(200);
    expect((await getDeal(p.token, deal.id, "?include=contact")).contact).toEqual({
      id: contact.id,
      firstName: contact.firstName,
      lastName: contact.lastName,
      email: contact.email,
    });
  });

  it("testimonials, referrals and surveys refuse a trashed or unknown contact or deal, naming the field", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const contact = await createContact(p.token);
    expect((await del(p, `/v1/contacts/${contact.id}`)).status).toBe(200);
    expect((await del(p, `/v1/deals/${deal.id}`)).status).toBe(200);
    const refused = async (path: string, body: Record<string, unknown>, fields: string[]) => {
      const res = await call("POST", path, { token: p.token, body });
      expect(res.status, path).toBe(400);
      const issues = (await json(res)).issues as { field: string; code: string }[];
      expect(issues.map((i) => `${i.field}:${i.code}`).sort(), path).toEqual(fields.map((f) => `${f}:invalid_reference`).sort());
    };
    await refused(
      "/api/reputation/testimonials",
      { agentUserId: p.userId, authorPersonId: contact.id, dealId: deal.id, category: "BUYER", rating: 5, body: "Great" },
      ["authorPersonId", "dealId"],
    );
    await refused(
      "/api/reputation/testimonials",
      { agentUserId: p.userId, dealId: "00000000-0000-4000-8000-000000000000", category: "BUYER", rating: 5, body: "Great" },
      ["dealId"],
    );
    await refused("/api/reputation/referrals", { agentUserId: p.userId, referrerPersonId: contact.id, referredName: "Friend" }, [
      "referrerPersonId",
    ]);
    await refused(
      "/api/reputation/surveys",
      {
        agentUserId: p.userId,
        recipientPersonId: contact.id,
        dealId: deal.id,
        channel: "LINK",
        templateId: (await createSurveyTemplate(p)).id,
      },
      ["recipientPersonId", "dealId"],
    );
    for (const table of ["testimonials", "referrals", "surveys"])
      expect((await rowsOf(p, table, "organization_id = ?", p.organizationId)).length, table).toBe(0);
  });
});
