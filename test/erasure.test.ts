import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../src/db/client";
import { everyShard } from "../src/shards/bindings";
import { sendDueSurveys } from "../src/surveys/scheduling";
import { call, json } from "./helpers/client";
import { createContact, expectCrmError, logActivity } from "./helpers/contacts";
import { createDeal, getDeal } from "./helpers/deals";
import { createDocument, leaseCanonical, sendForSignature, signAll, tokenOf } from "./helpers/documents";
import { createPrincipal, tenantDb, type TestPrincipal } from "./helpers/factories";
import { receiverUrl } from "./helpers/receiver";
import { aggregateOf, publishedTestimonial } from "./helpers/testimonials";
import { createSurveyTemplate, publicSurvey, scheduleSurvey, STANDARD_QUESTIONS } from "./helpers/surveys";

/** Tables that make up a signed envelope (and the document that was signed): kept as signed. */
const SIGNED_RECORD = /^(envelopes|envelope_signers|envelope_audit|signing_links|documents|document_vectors|document_obligations)$/;

/**
 * Every text column of every table of the directory and of every shard (issue 24), searched for each needle
 * (case-insensitive): where the person still appears, as `table.column: needle (database)`. One query per table.
 */
async function whereFound(needles: string[]): Promise<string[]> {
  const databases = [{ label: "directory", db: env.DB }, ...everyShard(env).map(({ shard, db }) => ({ label: `shard ${shard}`, db }))];
  const found: string[] = [];
  for (const { label, db } of databases) {
    const tables = await db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'd1_%'").all<{ name: string }>();
    for (const { name } of tables.results) {
      const columns = await db.prepare(`SELECT name, type FROM pragma_table_info(?)`).bind(name).all<{ name: string; type: string }>();
      const probes = columns.results.filter((c) => /text|char|clob|^$/i.test(c.type)).flatMap((column) => needles.map((needle) => ({ column: column.name, needle })));
      if (probes.length === 0) continue;
      // Each needle is bound once (?1 … ?n) and named by every column's test: D1 caps the bound parameters of a query.
      const sums = probes.map(({ column, needle }, i) => `SUM(instr(lower(CAST("${column}" AS TEXT)), ?${needles.indexOf(needle) + 1}) > 0) AS "${i}"`);
      const hits = await db.prepare(`SELECT ${sums.join(", ")} FROM "${name}"`).bind(...needles.map((n) => n.toLowerCase())).first<Record<string, number | null>>();
      probes.forEach(({ column, needle }, i) => {
        if ((hits?.[String(i)] ?? 0) > 0) found.push(`${name}.${column}: ${needle} (${label})`);
      });
    }
  }
  return found;
}

const erase = (p: TestPrincipal, id: string) => call("DELETE", `/v1/contacts/${id}?erase=true`, { token: p.token });

describe("erasure on request (DELETE /v1/contacts/{id}?erase=true)", () => {
  it("takes the person's name and e-mail out of everything but the envelope they signed, keeping the numbers", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    const person = { firstName: "Zephyrine", lastName: "Quillfeather", email: `zephyrine.${crypto.randomUUID().slice(0, 8)}@erase.test`, phone: "+1 416 555 0142" };
    const needles = [person.firstName, person.lastName, person.email, person.phone];
    // Webhook deliveries copy contact events, name and all.
    expect((await call("POST", "/v1/webhooks", { token: p.token, body: { url: `${receiverUrl()}/hooks/sink`, events: ["contact.created", "contact.updated"] } })).status).toBe(201);
    const contact = await createContact(p.token, { ...person, tags: ["client"], notes: `Met ${person.firstName} at the open house` });
    await logActivity(p.token, contact.id, { type: "PHONE_CALL", description: `Called ${person.firstName}` });
    const deal = await createDeal(p.token, { contactId: contact.id, title: "Condo purchase" });
    // Authored a testimonial (published, so the aggregates count it), referred a friend, got a survey by mail.
    const testimonial = await publishedTestimonial(p, { authorPersonId: contact.id, displayName: `${person.firstName} Q.`, permissionToPublishName: true, rating: 4 });
    const referral = await call("POST", "/api/reputation/referrals", { token: p.token, body: { agentUserId: p.userId, referrerPersonId: contact.id, referredName: "Friendly Neighbour", referredContact: `friend.${crypto.randomUUID().slice(0, 8)}@erase.test` } });
    expect(referral.status).toBe(201);
    // Someone else referred them by phone; an agent's note names them.
    const byPhone = await call("POST", "/api/reputation/referrals", { token: p.token, body: { agentUserId: p.userId, referredName: `${person.firstName} ${person.lastName}`, referredContact: person.phone, notes: `Call ${person.firstName} ${person.lastName} after 5` } });
    expect(byPhone.status).toBe(201);
    const template = await createSurveyTemplate(p, { questions: STANDARD_QUESTIONS });
    const survey = await scheduleSurvey(p, { templateId: template.id, recipientPersonId: contact.id, channel: "EMAIL" });
    await db.prepare("UPDATE surveys SET send_at = ? WHERE id = ?").bind(new Date(Date.now() - 1000).toISOString(), survey.id).run();
    expect(await sendDueSurveys(env, createDb(db))).toBeGreaterThanOrEqual(1);
    // A second survey, by link, answered with a comment that signs off with their name.
    const answered = await scheduleSurvey(p, { templateId: template.id, recipientPersonId: contact.id, channel: "LINK" });
    expect((await publicSurvey("GET", answered.accessToken)).status).toBe(200);
    const reply = await publicSurvey("POST", answered.accessToken, { answers: { overall: 5, recommend: 9, comments: `Wonderful help. ${person.firstName} ${person.lastName}, ${person.phone}`, publish: false } });
    expect(reply.status, await reply.clone().text()).toBe(200);
    // A name that is also a word of the payloads ("Lead", a stage) must not be taken out of other fields.
    const lead = await createContact(p.token, { firstName: "Lead", lastName: "Sale" });
    const leadDeal = await createDeal(p.token, { contactId: lead.id, type: "SALE" });
    // Signed an envelope as the tenant.
    const document = await createDocument(p.token, leaseCanonical({ tenants: [{ name: `${person.firstName} ${person.lastName}`, email: person.email }] }));
    const sent = await sendForSignature(p.token, document.id);
    for (const link of sent.links) await signAll(tokenOf(link.url));
    // One delivery per contact event, once the fan-out has run.
    const contactEvents = "SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type IN ('contact.created', 'contact.updated')";
    const subscribed = await db.prepare(contactEvents).bind(p.organizationId).first<{ n: number }>();
    await vi.waitFor(async () => expect(await db.prepare("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE organization_id = ?").bind(p.organizationId).first<{ n: number }>()).toEqual(subscribed), { timeout: 5000 });
    const aboutThem = await db.prepare(`${contactEvents} AND instr(data, ?) > 0`).bind(p.organizationId, contact.id).first<{ n: number }>();
    expect(await whereFound(needles)).not.toEqual([]);
    const aggregateBefore = await aggregateOf(p);

    const res = await erase(p, contact.id);
    expect(res.status).toBe(200);
    const answer = (await json(res)).data;
    expect(answer).toMatchObject({ id: contact.id, deleted: true, retained: ["signed_envelopes"] });
    expect(answer.erased).toMatchObject({ contacts: 1, activities: 1, testimonials: 1, mails: expect.any(Number), events: expect.any(Number), webhook_deliveries: aboutThem!.n });

    // Nowhere but in the signed envelope.
    const left = (await whereFound(needles)).filter((hit) => !SIGNED_RECORD.test(hit.slice(0, hit.indexOf("."))));
    expect(left).toEqual([]);
    expect((await whereFound([person.email])).some((hit) => hit.startsWith("envelope_signers."))).toBe(true);

    expect(await db.prepare("SELECT ip, user_agent FROM survey_responses WHERE survey_id = ?").bind(answered.id).first()).toEqual({ ip: null, user_agent: null });

    // Erasing "Lead Sale" leaves the stages and types of the events it appears in alone.
    expect((await erase(p, lead.id)).status).toBe(200);
    const leadEvent = await db.prepare("SELECT data FROM outbox_events WHERE organization_id = ? AND type = 'deal.created' AND instr(data, ?) > 0").bind(p.organizationId, leadDeal.id).first<{ data: string }>();
    expect(JSON.parse(leadEvent!.data).object).toMatchObject({ id: leadDeal.id, type: "SALE", stage: "LEAD" });

    // The numbers stay; references point at a tombstone.
    expect(await aggregateOf(p)).toEqual(aggregateBefore);
    const shownTestimonial = await json(await call("GET", `/api/reputation/testimonials/${testimonial.id}`, { token: p.token }));
    expect(shownTestimonial).toMatchObject({ rating: 4, authorPersonId: contact.id, displayName: null });
    expect((await getDeal(p.token, deal.id, "?include=contact")).contact).toMatchObject({ id: contact.id, deleted: true });
    expect((await call("GET", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(404);
    await expectCrmError(await call("POST", `/v1/contacts/${contact.id}/restore`, { token: p.token }), 404, "not_found_error");
    await expectCrmError(await erase(p, contact.id), 404, "not_found_error");
    // The record of the erasure: who and what kinds, no personal data (the search above covered its table too).
    const audit = await db.prepare("SELECT * FROM erasures WHERE organization_id = ? AND contact_id = ?").bind(p.organizationId, contact.id).all<Record<string, string>>();
    expect(audit.results).toHaveLength(1);
    expect(audit.results[0]).toMatchObject({ contact_id: contact.id, actor_user_id: p.userId, retained: '["signed_envelopes"]' });
    expect(JSON.parse(audit.results[0]!.erased!)).toEqual(answer.erased);
  });

  it("honours If-Match: a stale version is a 412 and erases nothing", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, { firstName: "Stale", lastName: "Version" });
    expect((await call("PUT", `/v1/contacts/${contact.id}`, { token: p.token, body: { notes: "moved on" } })).status).toBe(200);
    const stale = await call("DELETE", `/v1/contacts/${contact.id}?erase=true`, { token: p.token, headers: { "if-match": '"1"' } });
    expect(stale.status).toBe(412);
    expect((await call("GET", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    expect((await call("DELETE", `/v1/contacts/${contact.id}?erase=true`, { token: p.token, headers: { "if-match": '"2"' } })).status).toBe(200);
  });

  it("refuses an unknown query parameter on the deletes and restores of every kind", async () => {
    const p = await createPrincipal();
    for (const path of ["/v1/contacts/x", "/v1/deals/x", "/v1/properties/x"]) {
      expect((await call("DELETE", `${path}?erase=true&colour=red`, { token: p.token })).status, path).toBe(422);
      expect((await call("POST", `${path}/restore?colour=red`, { token: p.token })).status, path).toBe(422);
    }
    expect((await call("DELETE", "/v1/properties/x?erase=true", { token: p.token })).status).toBe(422);
  });

  it("erases a contact waiting in the trash too, and answers other organizations as for an unknown id", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const contact = await createContact(p.token, { firstName: "Trashie", lastName: "Eraseme" });
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    await expectCrmError(await erase(other, contact.id), 404, "not_found_error");
    const res = await erase(p, contact.id);
    expect(res.status).toBe(200);
    expect(await (await tenantDb(p.organizationId)).prepare("SELECT COUNT(*) AS n FROM trash_rows WHERE record_id = ?").bind(contact.id).first()).toEqual({ n: 0 });
    expect(await whereFound(["Eraseme", contact.email])).toEqual([]);
    expect((await json(await call("GET", "/v1/trash", { token: p.token }))).data).toEqual([]);
  });
});
