import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { taggedPdf } from "../helpers/tagged-pdfs";
import { act, buildPdf, linkOf, sendUpload, uploaded } from "../helpers/uploads";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { runDuePlanSteps } from "../../src/action-plans/runner";
import type { Env } from "../../src/env";
import { sendObligationNotices } from "../../src/documents/obligation-notices";
import { CATALOGUE, type CatalogueName } from "../../src/webhooks/catalogue";
import { call, json } from "../helpers/client";
import { createContact, updateContact } from "../helpers/contacts";
import { createDeal, createTask, documentForm, moveDeal, updateDeal } from "../helpers/deals";
import {
  createDocument,
  freshIp,
  leaseCanonical,
  publicSign,
  sendForSignature,
  signAll,
  signingCodeFor,
  tokenOf,
} from "../helpers/documents";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { newAgreement, publicAccept } from "../helpers/clickwrap";
import { publishedProfile } from "../helpers/profiles";
import { createProperty, photoForm, PNG_1X1, updateProperty } from "../helpers/properties";
import { type Mailbox, openMailbox, type ReceivedRequest } from "../helpers/receiver";
import { createSurveyTemplate, publicSurvey, scheduleSurvey } from "../helpers/surveys";
import { createTestimonial, move } from "../helpers/testimonials";
import { subscribe } from "../helpers/webhooks";
import { healEndpoints } from "../../src/webhooks/healing";
import { announceDueTasks } from "../../src/tasks/service";

/**
 * Issue 32, "Done when": one endpoint subscribed to every event of the catalogue receives each one, driven through the
 * API and the public signing, survey, referral and clickwrap flows (and the cron, for obligations), every delivery
 * signed (verified with the official `standardwebhooks` package) and in the spec's payload structure, with no token,
 * code or secret anywhere in its body.
 */

interface Payload {
  id: string;
  event: string;
  apiVersion: string;
  createdAt: string;
  data: {
    object: Record<string, any>;
    previousAttributes: Record<string, unknown> | null;
    changes: string[] | null;
    [extra: string]: unknown;
  };
  organization: { id: string; name: string };
  user: { id: string; name: string | null; email: string } | null;
}

/** What the rows share: the organization, the secrets no body may carry, and fixtures made once by the first row that needs them. */
interface World {
  owner: TestPrincipal;
  /** Tokens, codes and secrets handed out while driving: none may appear in a delivery. */
  secrets: Set<string>;
  once<T>(key: string, make: () => Promise<T>): Promise<T>;
}

const ok = async (res: Response, status = 200) => {
  const body = await res.text();
  expect(res.status, body).toBe(status);
  return JSON.parse(body);
};

// -- Fixtures: each makes several events at once, so the rows that need it share it.

const contact = (w: World) =>
  w.once("contact", async () => {
    const c = await createContact(w.owner.token, { tags: ["vip"], assignedTo: w.owner.userId });
    await updateContact(w.owner.token, c.id, { firstName: "Renamed", tags: [] });
    await ok(await call("DELETE", `/v1/contacts/${c.id}`, { token: w.owner.token }));
    await ok(await call("POST", `/v1/contacts/${c.id}/restore`, { token: w.owner.token }));
  });

/** Issue 46: a lead waiting in a pond (placed there in D1, so the organization's settings stay as they are), claimed by its member. */
const claimedLead = (w: World) =>
  w.once("claimedLead", async () => {
    const pond = await ok(
      await call("POST", "/v1/ponds", { token: w.owner.token, body: { name: "Catalogue pond", members: [w.owner.userId] } }),
      201,
    );
    const c = await createContact(w.owner.token, {});
    const at = new Date().toISOString();
    const db = await tenantDb(w.owner.organizationId);
    await db.batch([
      db.prepare("UPDATE contacts SET pond_id = ?, assigned_to = NULL WHERE id = ?").bind(pond.data.id, c.id),
      db
        .prepare(
          "INSERT INTO contact_routing (contact_id, organization_id, state, trail, updated_at, version) VALUES (?, ?, 'pond', '[]', ?, 1)",
        )
        .bind(c.id, w.owner.organizationId, at),
    ]);
    await ok(await call("POST", `/v1/contacts/${c.id}/claim`, { token: w.owner.token }));
  });

/** Issue 46: a contact tagged into a smart list's query enters it (the events consumer), untagged it exits. */
const smartList = (w: World) =>
  w.once("smartList", async () => {
    const list = await ok(
      await call("POST", "/v1/smart-lists", { token: w.owner.token, body: { name: "Smart VIPs", query: { tags: "smart-vip" } } }),
      201,
    );
    const c = await createContact(w.owner.token, { tags: ["smart-vip"] });
    // The exit only after the entry: the consumer evaluates the contact as it is when it runs.
    await vi.waitFor(
      async () => expect((await stagedCounts(w.owner.organizationId, ["smart_list.entered"]))["smart_list.entered"]).toBe(1),
      {
        timeout: 30_000,
        interval: 200,
      },
    );
    await updateContact(w.owner.token, c.id, { tags: [] });
    return list;
  });

const appointment = (w: World) =>
  w.once("appointment", async () => {
    const c = await createContact(w.owner.token);
    const body = {
      type: "buyer_consultation",
      startsAt: "2030-01-02T15:00:00Z",
      endsAt: "2030-01-02T16:00:00Z",
      timeZone: "America/Toronto",
      location: "Office",
      attendees: [{ contactId: c.id }],
    };
    const a = (await ok(await call("POST", "/v1/appointments", { token: w.owner.token, body }), 201)).data;
    await ok(await call("PATCH", `/v1/appointments/${a.id}`, { token: w.owner.token, body: { location: "Coffee shop" } }));
    await ok(await call("POST", `/v1/appointments/${a.id}/cancel`, { token: w.owner.token, body: { reason: "Rain" } }));
  });

const communications = (w: World) =>
  w.once("communications", async () => {
    const c = await createContact(w.owner.token, {});
    const log = (body: Record<string, unknown>) => call("POST", `/v1/contacts/${c.id}/communications`, { token: w.owner.token, body });
    for (const direction of ["outbound", "inbound"]) {
      await ok(await log({ type: "email", direction, subject: "Elm St", body: "Hello" }), 201);
      await ok(await log({ type: "sms", direction, body: "See you at 5" }), 201);
    }
    await ok(await log({ type: "call", direction: "outbound", durationSeconds: 95 }), 201);
    await ok(await log({ type: "voicemail", direction: "inbound", durationSeconds: 20, body: "Call me back" }), 201);
  });

const deal = (w: World) =>
  w.once("deal", async () => {
    const d = await createDeal(w.owner.token);
    await updateDeal(w.owner.token, d.id, { title: "456 King St purchase" });
    const task = await createTask(w.owner.token, d.id);
    await ok(await call("POST", `/v1/deals/${d.id}/tasks/${task.id}/complete`, { token: w.owner.token }));
    await ok(await call("POST", `/v1/deals/${d.id}/documents`, { token: w.owner.token, body: documentForm() }), 201);
    await moveDeal(w.owner.token, d.id, "CLOSED");
    await moveDeal(w.owner.token, (await createDeal(w.owner.token)).id, "LOST", { reason: "bought elsewhere" });
    await ok(await call("DELETE", `/v1/deals/${d.id}`, { token: w.owner.token }));
    await ok(await call("POST", `/v1/deals/${d.id}/restore`, { token: w.owner.token }));
  });

const property = (w: World) =>
  w.once("property", async () => {
    const p = await createProperty(w.owner.token);
    await updateProperty(w.owner.token, p.id, { listing: { listPrice: 625000 } });
    await updateProperty(w.owner.token, p.id, { listing: { status: "PENDING" } });
    await ok(
      await call("POST", `/v1/properties/${p.id}/photos`, {
        token: w.owner.token,
        body: photoForm([{ bytes: PNG_1X1, name: "front.png", type: "image/png" }]),
      }),
      201,
    );
    const buyer = await createContact(w.owner.token);
    for (const signal of [
      { type: "INQUIRY", message: "Is it available?" },
      { type: "SHOWING", scheduledAt: "2030-01-01T15:00:00Z" },
      { type: "OFFER", amount: 640000 },
    ]) {
      await ok(
        await call("POST", `/v1/properties/${p.id}/signals`, { token: w.owner.token, body: { ...signal, contactId: buyer.id } }),
        201,
      );
    }
    await ok(await call("DELETE", `/v1/properties/${p.id}`, { token: w.owner.token }));
    await ok(await call("POST", `/v1/properties/${p.id}/restore`, { token: w.owner.token }));
  });

/** A lease with a deposit due 2026-12-20, for one signer, sent for signature. */
async function sentLease(w: World, request: Record<string, unknown> = {}) {
  const email = `${crypto.randomUUID()}@signer.test`;
  const canonical = leaseCanonical({ tenants: [{ name: "Sam Signer", email }] });
  canonical.lease.deposit = { cents: 250_000, dueDate: { year: 2026, month: 12, day: 20 } } as typeof canonical.lease.deposit;
  const doc = await createDocument(w.owner.token, canonical);
  const sent = await sendForSignature(w.owner.token, doc.id, { signers: [{ name: "Sam Signer", email, role: "tenant" }], ...request });
  const token = tokenOf(sent.links[0]!.url);
  w.secrets.add(token);
  return { doc, sent, token, email };
}

/** Sent, opened, verified by a mailed code, signed by its only signer: completed, then sealed by the consumer. */
const signedEnvelope = (w: World) =>
  w.once("signed", async () => {
    const lease = await sentLease(w, { signerVerification: "code" });
    await ok(await publicSign("GET", lease.token));
    await ok(await publicSign("POST", lease.token, { action: "send_code" }));
    const code = await signingCodeFor(lease.email);
    w.secrets.add(code);
    await ok(await publicSign("POST", lease.token, { action: "authenticate", code }));
    await ok(await publicSign("POST", lease.token, { action: "consent" }));
    expect(await ok(await publicSign("POST", lease.token, { action: "sign" }))).toEqual({ ok: true, completed: true });
    return lease;
  });

const declinedEnvelope = (w: World) =>
  w.once("declined", async () => {
    const { token } = await sentLease(w);
    await ok(await publicSign("GET", token));
    await ok(await publicSign("POST", token, { action: "decline", reason: "wrong unit" }));
  });

const voidedEnvelope = (w: World) =>
  w.once("voided", async () => {
    const { sent } = await sentLease(w);
    await ok(await call("DELETE", `/api/signatures/${sent.envelopeId}?reason=superseded`, { token: w.owner.token }));
  });

/** Its expiry moved into the past before its object loaded it: the next use of its link ends it. */
const expiredEnvelope = (w: World) =>
  w.once("expired", async () => {
    const { sent, token } = await sentLease(w, { expiresInDays: 1 });
    await (await tenantDb(w.owner.organizationId))
      .prepare("UPDATE envelopes SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), sent.envelopeId)
      .run();
    expect((await publicSign("GET", token)).status).toBe(404);
  });

/** The cron's notices pass on the organization's shard, on the days a lease's deposit (due 2026-12-20) is due soon, then overdue. */
const obligationNotices = (w: World) =>
  w.once("obligations", async () => {
    await signedEnvelope(w);
    const db = createDb(await tenantDb(w.owner.organizationId));
    expect(await sendObligationNotices(env, db, { now: new Date("2026-12-16T09:00:00Z") })).toBeGreaterThan(0);
    expect(await sendObligationNotices(env, db, { now: new Date("2026-12-21T09:00:00Z") })).toBeGreaterThan(0);
  });

const testimonial = (w: World) =>
  w.once("testimonial", async () => {
    const t = await createTestimonial(w.owner, { rating: 5, headline: "Found us a home" });
    await move(w.owner, t.id, "approve");
    await move(w.owner, t.id, "publish");
  });

const survey = (w: World) =>
  w.once("survey", async () => {
    const template = await createSurveyTemplate(w.owner);
    const issued = await scheduleSurvey(w.owner, { templateId: template.id });
    w.secrets.add(issued.accessToken);
    await ok(await publicSurvey("GET", issued.accessToken));
    await ok(
      await publicSurvey("POST", issued.accessToken, {
        answers: { overall: 5, recommend: 10, comments: "Patient and sharp.", publish: true },
      }),
    );
  });

const referral = (w: World) =>
  w.once("referral", async () => {
    const slug = await publishedProfile(w.owner);
    const body = {
      referrerName: "Rita Referrer",
      referrerEmail: `${crypto.randomUUID()}@referrer.test`,
      referredName: "Lee Lead",
      referredEmail: `${crypto.randomUUID()}@lead.test`,
    };
    await ok(await call("POST", `/api/public/referral/${slug}`, { body, headers: { "cf-connecting-ip": freshIp() } }), 202);
  });

const clickwrap = (w: World) =>
  w.once("clickwrap", async () => {
    const agreement = await newAgreement(w.owner);
    await ok(await publicAccept(agreement.id, { versionHash: agreement.versionHash, subjectRef: "client-42" }));
  });

const organization = (w: World) =>
  w.once("organization", async () => {
    await ok(
      await call("PATCH", "/v1/organization", {
        token: w.owner.token,
        body: { displayName: "Catalogue Realty", timeZone: "America/Toronto" },
      }),
    );
  });

const user = (w: World) =>
  w.once("user", async () => {
    const created = await ok(
      await call("POST", "/v1/users", { token: w.owner.token, body: { email: `${crypto.randomUUID()}@agents.test`, name: "Ivy Invitee" } }),
      201,
    );
    await ok(await call("PATCH", `/v1/users/${created.data.id}`, { token: w.owner.token, body: { role: "admin", acceptsLeads: false } }));
  });

const apiKey = (w: World) =>
  w.once("apiKey", async () => {
    const created = await ok(
      await call("POST", "/v1/api-keys", { token: w.owner.token, body: { name: "IDX site", permissions: ["contacts:read"] } }),
      201,
    );
    w.secrets.add(created.data.key);
    expect((await call("DELETE", `/v1/api-keys/${created.data.id}`, { token: w.owner.token })).status).toBe(204);
  });

/** Another endpoint of the organization has failed every delivery for 6 days: the cron's healing pass turns it off. */
const disabledEndpoint = (w: World) =>
  w.once("disabledEndpoint", async () => {
    const failing = await openMailbox({ fallback: 500 });
    const other = await subscribe(w.owner, { url: failing.url, events: ["deal.created"] });
    w.secrets.add(other.secret);
    const db = await tenantDb(w.owner.organizationId);
    await db
      .prepare("UPDATE webhook_subscriptions SET failing_since = ? WHERE id = ?")
      .bind(new Date(Date.now() - 6 * 86_400_000).toISOString(), other.id)
      .run();
    expect(await healEndpoints(env, createDb(db))).toBe(1);
  });

/** A book of two people imported (issue 33): one import.completed with the counts, no per-contact event. */
const importBook = (w: World) =>
  w.once("import", async () => {
    const rows = [
      { firstName: "Imp", lastName: "Orted", email: `${crypto.randomUUID()}@import.test` },
      { firstName: "No", lastName: "Email" },
    ];
    const started = await ok(await call("POST", "/v1/imports", { token: w.owner.token, body: { kind: "contacts", rows } }), 202);
    await vi.waitFor(
      async () =>
        expect((await ok(await call("GET", `/v1/imports/${started.data.id}`, { token: w.owner.token }))).data.status).toBe("completed"),
      { timeout: 20_000, interval: 200 },
    );
  });

/** An uploaded PDF whose approver (order 1) approves; its signer (order 2) is left to sign (issue 44). */
const approvedUpload = (w: World) =>
  w.once("approvedUpload", async () => {
    const doc = await uploaded(w.owner.token, await buildPdf([{}]));
    const sent = await sendUpload(w.owner.token, doc.id, {
      recipients: [
        { key: "a", name: "Abe Approver", email: `${crypto.randomUUID()}@approver.test`, role: "approver", order: 1 },
        { key: "s", name: "Sal Signer", email: `${crypto.randomUUID()}@signer.test`, role: "signer", order: 2 },
      ],
      fields: [{ recipient: "s", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8 }],
    });
    for (const l of sent.links) w.secrets.add(linkOf(sent, l.key!));
    expect(await json(await act(linkOf(sent, "a"), "approve"))).toMatchObject({ ok: true, completed: false });
  });

/** Issue 45: a tagged PDF over 20 pages, its tags found by the queue consumer (document.updated when they are). */
const taggedUpload = (w: World) =>
  w.once("taggedUpload", async () => {
    const pages = Array.from({ length: 21 }, (_, i) => ({
      lines: [{ x: 40, y: 700, text: i === 20 ? "{{signature;role=buyer}}" : "Page" }],
    }));
    await uploaded(w.owner.token, await taggedPdf(pages), "tags=true");
  });

/** Issue 45: a template made from an upload, renamed, deleted and restored: one event each. */
const templateLife = (w: World) =>
  w.once("templateLife", async () => {
    const doc = await uploaded(w.owner.token, await buildPdf([{}]));
    const made = await ok(
      await call("POST", "/api/templates", {
        token: w.owner.token,
        body: {
          documentId: doc.id,
          name: "Showing agreement",
          roles: [{ key: "buyer", label: "Buyer", role: "signer" }],
          fields: [{ role: "buyer", type: "signature", name: "sig", page: 1, x: 10, y: 80, width: 30, height: 6 }],
        },
      }),
      201,
    );
    const path = `/api/templates/${made.template.id}`;
    await ok(await call("PATCH", path, { token: w.owner.token, body: { name: "Showing agreement (2027)" } }), 200);
    expect((await call("DELETE", path, { token: w.owner.token })).status).toBe(204);
    await ok(await call("POST", `${path}/restore`, { token: w.owner.token }), 200);
  });

/** Issue 46: a task created, changed, announced due by the cron's pass, completed; another deleted. */
const taskLife = (w: World) =>
  w.once("tasks", async () => {
    const made = async (title: string) =>
      (await ok(await call("POST", "/v1/tasks", { token: w.owner.token, body: { title, dueAt: "2026-01-05T09:00:00Z" } }), 201)).data as {
        id: string;
      };
    const task = await made("Call the buyer");
    await ok(await call("PATCH", `/v1/tasks/${task.id}`, { token: w.owner.token, body: { priority: "HIGH" } }), 200);
    const db = createDb(await tenantDb(w.owner.organizationId));
    while ((await announceDueTasks(env, db, new Date("2026-01-05T09:00:00Z"))) > 0);
    await ok(await call("POST", `/v1/tasks/${task.id}/complete`, { token: w.owner.token }), 200);
    const gone = await made("Send the flyer");
    await ok(await call("DELETE", `/v1/tasks/${gone.id}`, { token: w.owner.token }), 200);
  });

/** Issue 46: a contact enrolled in a plan whose notify step runs and completes it; another enrolled and paused. */
const actionPlan = (w: World) =>
  w.once("actionPlan", async () => {
    const plan = (
      await ok(
        await call("POST", "/v1/action-plans", {
          token: w.owner.token,
          body: { name: "Catalogue plan", steps: [{ type: "notify", delay: "PT0S" }] },
        }),
        201,
      )
    ).data;
    const [a, b] = [await createContact(w.owner.token), await createContact(w.owner.token)];
    const path = `/v1/action-plans/${plan.id}/enrollments`;
    const enrolled = (await ok(await call("POST", path, { token: w.owner.token, body: { contactId: a.id } }), 201)).data;
    const other = (await ok(await call("POST", path, { token: w.owner.token, body: { contactId: b.id } }), 201)).data;
    await ok(await call("POST", `${path}/${other.id}/pause`, { token: w.owner.token }), 200);
    await runDuePlanSteps(env as Env, createDb(await tenantDb(w.owner.organizationId)), new Date(Date.parse(enrolled.enrolledAt) + 60_000));
  });

const isSha256 = (v: unknown) => typeof v === "string" && /^[0-9a-f]{64}$/.test(v);

/**
 * How each catalogue event is made to fire, and what its payload must say beyond the common shape. One row per event.
 */
const DRIVE: { event: CatalogueName; drive(w: World): Promise<unknown>; check?(p: Payload, w: World): void | Promise<void> }[] = [
  { event: "contact.created", drive: contact, check: (p) => expect(p.data.object.tags).toEqual(["vip"]) },
  { event: "contact.updated", drive: contact, check: (p) => expect(p.data.changes).toContain("firstName") },
  { event: "contact.tagged", drive: contact, check: (p) => expect(p.data.tags).toEqual(["vip"]) },
  { event: "contact.untagged", drive: contact },
  { event: "contact.assigned", drive: contact },
  {
    event: "contact.claimed",
    drive: claimedLead,
    check: (p, w) => expect(p.data).toMatchObject({ claimedBy: w.owner.userId, object: { assignedTo: w.owner.userId } }),
  },
  { event: "contact.deleted", drive: contact },
  { event: "contact.restored", drive: contact },
  { event: "deal.created", drive: deal },
  { event: "deal.updated", drive: deal },
  { event: "deal.deleted", drive: deal },
  { event: "deal.restored", drive: deal },
  {
    event: "deal.stage_changed",
    drive: deal,
    check: (p) => expect(p.data.stageChange).toMatchObject({ previousStage: expect.any(String), newStage: expect.any(String) }),
  },
  { event: "deal.won", drive: deal },
  { event: "deal.lost", drive: deal },
  { event: "deal.task_created", drive: deal, check: (p) => expect(p.data.task).toMatchObject({ id: expect.any(String) }) },
  { event: "deal.task_completed", drive: deal },
  { event: "deal.closed", drive: deal },
  {
    event: "task.created",
    drive: taskLife,
    check: (p) => expect(p.data.object).toMatchObject({ title: "Call the buyer", status: "open" }),
  },
  { event: "task.updated", drive: taskLife, check: (p) => expect(p.data.changes).toEqual(["priority"]) },
  { event: "task.due", drive: taskLife, check: (p) => expect(p.data.object).toMatchObject({ dueAt: "2026-01-05T09:00:00.000Z" }) },
  { event: "task.completed", drive: taskLife, check: (p) => expect(p.data.object).toMatchObject({ status: "completed" }) },
  { event: "task.deleted", drive: taskLife, check: (p) => expect(p.data.object).toMatchObject({ title: "Send the flyer" }) },
  { event: "deal.document_uploaded", drive: deal },
  { event: "property.created", drive: property },
  { event: "property.updated", drive: property },
  { event: "property.deleted", drive: property },
  { event: "property.restored", drive: property },
  { event: "property.status_changed", drive: property },
  { event: "property.price_changed", drive: property, check: (p) => expect(p.data.priceChange).toMatchObject({ newPrice: 625000 }) },
  { event: "property.photos_uploaded", drive: property },
  {
    event: "property.inquiry_received",
    drive: property,
    check: (p) => expect(p.data.signal).toMatchObject({ recordedAt: expect.any(String) }),
  },
  { event: "property.showing_scheduled", drive: property },
  { event: "action_plan.enrolled", drive: actionPlan, check: (p) => expect(p.data.object).toMatchObject({ status: "active" }) },
  {
    event: "action_plan.paused",
    drive: actionPlan,
    check: (p) => expect(p.data.object).toMatchObject({ status: "paused", pauseReason: "manual" }),
  },
  { event: "action_plan.completed", drive: actionPlan, check: (p) => expect(p.data.object).toMatchObject({ status: "completed" }) },
  { event: "action_plan.step_due", drive: actionPlan, check: (p) => expect(p.data.step).toMatchObject({ index: 0, type: "notify" }) },
  { event: "property.offer_received", drive: property },
  {
    event: "appointment.created",
    drive: appointment,
    check: (p) => expect(p.data.object).toMatchObject({ status: "scheduled", sequence: 0, timeZone: "America/Toronto" }),
  },
  {
    event: "appointment.updated",
    drive: appointment,
    check: (p) => {
      expect(p.data.object).toMatchObject({ location: "Coffee shop", sequence: 1 });
      expect(p.data.changes).toEqual(["location"]);
    },
  },
  {
    event: "appointment.cancelled",
    drive: appointment,
    check: (p) => expect(p.data).toMatchObject({ object: { status: "cancelled", sequence: 2 }, reason: "Rain" }),
  },
  {
    event: "communication.email_sent",
    drive: communications,
    check: (p) => expect(p.data.object).toMatchObject({ type: "email", direction: "outbound", subject: "Elm St" }),
  },
  {
    event: "communication.email_received",
    drive: communications,
    check: (p) => expect(p.data.object).toMatchObject({ type: "email", direction: "inbound" }),
  },
  {
    event: "communication.sms_sent",
    drive: communications,
    check: (p) => expect(p.data.object).toMatchObject({ type: "sms", direction: "outbound" }),
  },
  {
    event: "communication.sms_received",
    drive: communications,
    check: (p) => expect(p.data.object).toMatchObject({ type: "sms", direction: "inbound" }),
  },
  { event: "communication.call_started", drive: communications, check: (p) => expect(p.data.object).toMatchObject({ type: "call" }) },
  {
    event: "communication.call_ended",
    drive: communications,
    check: (p) => expect(p.data.object).toMatchObject({ type: "call", durationSeconds: 95 }),
  },
  {
    event: "communication.voicemail_received",
    drive: communications,
    check: (p) => expect(p.data.object).toMatchObject({ type: "voicemail", durationSeconds: 20 }),
  },
  {
    event: "organization.updated",
    drive: organization,
    check: (p) => expect([p.data.object.displayName, p.data.changes]).toEqual(["Catalogue Realty", ["displayName", "timeZone"]]),
  },
  { event: "user.created", drive: user, check: (p) => expect(p.data.object).toMatchObject({ name: "Ivy Invitee", role: "agent" }) },
  { event: "user.updated", drive: user, check: (p) => expect(p.data.object).toMatchObject({ role: "admin", acceptsLeads: false }) },
  { event: "integration.connected", drive: apiKey, check: (p) => expect(p.data.object).toMatchObject({ name: "IDX site" }) },
  { event: "integration.disconnected", drive: apiKey, check: (p) => expect(p.data.object).toMatchObject({ name: "IDX site" }) },
  {
    event: "webhook.endpoint_disabled",
    drive: disabledEndpoint,
    check: (p) => expect(p.data.object).toMatchObject({ enabled: false, disabledAt: expect.any(String) }),
  },
  {
    event: "document.created",
    drive: signedEnvelope,
    check: (p) =>
      expect(p.data.object).toMatchObject({
        status: "GENERATED",
        formKey: "on/standard-lease",
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      }),
  },
  {
    event: "document.updated",
    drive: taggedUpload,
    check: (p) => {
      expect(p.data.object).toMatchObject({
        source: "upload",
        tagsStatus: "done",
        fields: [{ type: "signature", role: "buyer", page: 21 }],
      });
      expect(p.data.changes).toEqual(expect.arrayContaining(["fields", "tagsStatus"]));
    },
  },
  {
    event: "template.created",
    drive: templateLife,
    check: (p) => expect(p.data.object).toMatchObject({ name: "Showing agreement", version: 1 }),
  },
  {
    event: "template.updated",
    drive: templateLife,
    check: (p) => {
      expect(p.data.object).toMatchObject({ name: "Showing agreement (2027)", version: 2 });
      expect(p.data.changes).toEqual(expect.arrayContaining(["name", "version"]));
    },
  },
  { event: "template.deleted", drive: templateLife },
  { event: "template.restored", drive: templateLife, check: (p) => expect(p.data.object).toMatchObject({ version: 2, publicLink: null }) },
  {
    event: "envelope.sent",
    drive: signedEnvelope,
    check: (p) =>
      expect(p.data.object).toMatchObject({ status: "partially_signed", signerVerification: "code", signers: [{ status: "sent" }] }),
  },
  {
    event: "envelope.opened",
    drive: signedEnvelope,
    check: (p) => {
      expect(p.data.signer).toMatchObject({ status: "opened", name: "Sam Signer" });
      expect(p.data.changes).toEqual(["signers"]);
    },
  },
  {
    event: "envelope.signer_signed",
    drive: signedEnvelope,
    check: (p) => expect(p.data.signer).toMatchObject({ status: "signed", verification: "email_code" }),
  },
  {
    event: "envelope.approved",
    drive: approvedUpload,
    check: (p) => {
      expect(p.data.signer).toMatchObject({ key: "a", role: "approver", status: "approved" });
      expect(p.data.object).toMatchObject({ status: "partially_signed" });
    },
  },
  {
    event: "envelope.completed",
    drive: signedEnvelope,
    check: (p) => {
      expect(p.data.object).toMatchObject({ status: "completed", completedAt: expect.any(String), signedDocument: { status: "pending" } });
      expect(p.data.previousAttributes).toMatchObject({ status: "partially_signed", completedAt: null });
    },
  },
  {
    event: "envelope.sealed",
    drive: signedEnvelope,
    async check(p, w) {
      expect(p.data.object).toMatchObject({ status: "completed", signedDocument: { status: "ready" } });
      const row = await (await tenantDb(w.owner.organizationId))
        .prepare("SELECT sealed_sha256 FROM envelopes WHERE id = ?")
        .bind(p.data.object.id)
        .first<{ sealed_sha256: string }>();
      // The sealed PDF's hash, which POST /api/public/verify knows it by; not the hash of the document the signers read.
      expect(p.data.documentSha256).toBe(row!.sealed_sha256);
      expect(isSha256(p.data.documentSha256) && p.data.documentSha256 !== p.data.object.document.sha256).toBe(true);
    },
  },
  {
    event: "envelope.declined",
    drive: declinedEnvelope,
    check: (p) => expect([p.data.object.status, p.data.signer]).toMatchObject(["declined", { status: "declined" }]),
  },
  {
    event: "envelope.voided",
    drive: voidedEnvelope,
    check: (p) => expect([p.data.object.status, p.data.previousAttributes?.status]).toEqual(["voided", "partially_signed"]),
  },
  { event: "envelope.expired", drive: expiredEnvelope, check: (p) => expect(p.data.object.status).toBe("expired") },
  {
    event: "obligation.due_soon",
    drive: obligationNotices,
    check: (p) =>
      expect(p.data.object).toMatchObject({
        type: "deposit_due",
        dueDate: "2026-12-20T00:00:00.000Z",
        urgency: "due_soon",
        amountCents: 250_000,
      }),
  },
  {
    event: "obligation.overdue",
    drive: obligationNotices,
    check: (p) => expect(p.data.object).toMatchObject({ type: "deposit_due", urgency: "overdue" }),
  },
  {
    event: "clickwrap.accepted",
    drive: clickwrap,
    check: (p) =>
      expect(p.data.object).toMatchObject({
        subjectRef: "client-42",
        agreementId: expect.any(String),
        versionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      }),
  },
  {
    event: "testimonial.approved",
    drive: testimonial,
    check: (p) => expect([p.data.object.status, p.data.previousAttributes?.status]).toEqual(["APPROVED", "PENDING"]),
  },
  {
    event: "testimonial.published",
    drive: testimonial,
    check: (p) => expect(p.data.object).toMatchObject({ status: "PUBLISHED", visibility: "PUBLIC", rating: 5 }),
  },
  {
    event: "survey.completed",
    drive: survey,
    check: (p) =>
      expect(p.data.object).toMatchObject({ status: "COMPLETED", response: { answers: { overall: 5, recommend: 10, publish: true } } }),
  },
  {
    event: "import.completed",
    drive: importBook,
    check: (p) => expect(p.data.object).toMatchObject({ kind: "contacts", status: "completed", processed: 2, created: 1, failed: 1 }),
  },
  {
    event: "referral.received",
    drive: referral,
    check: (p) => expect(p.data.object).toMatchObject({ status: "RECEIVED", channel: "PUBLIC_PROFILE", referredName: "Lee Lead" }),
  },
  {
    event: "smart_list.entered",
    drive: smartList,
    check: (p) => expect(p.data.object).toMatchObject({ name: "Smart VIPs", contactId: expect.any(String) }),
  },
  { event: "smart_list.exited", drive: smartList, check: (p) => expect(p.data.object).toMatchObject({ name: "Smart VIPs" }) },
];

/** The deliveries of `box` by event name, once every name of `events` has arrived. */
async function deliveriesOf(box: Mailbox, events: string[]): Promise<Map<string, ReceivedRequest[]>> {
  const byEvent = new Map<string, ReceivedRequest[]>();
  await vi.waitFor(
    async () => {
      byEvent.clear();
      for (const r of await box.received())
        byEvent.set(r.headers["x-service-event"]!, [...(byEvent.get(r.headers["x-service-event"]!) ?? []), r]);
      expect(events.filter((e) => !byEvent.has(e))).toEqual([]);
    },
    { timeout: 90_000, interval: 500 },
  );
  return byEvent;
}

describe("the whole webhook catalogue reaches a subscriber (issue 32)", () => {
  it("every catalogue event is driven by a row of DRIVE", () => {
    const driven = DRIVE.map((r) => r.event);
    expect(new Set(driven).size, "one row per event").toBe(driven.length);
    expect(
      CATALOGUE.filter((e) => !driven.includes(e)),
      "catalogue events no row drives",
    ).toEqual([]);
  });

  it("one endpoint subscribed to every event receives each, signed, in the payload structure, carrying no token or code", {
    timeout: 240_000,
  }, async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url, events: [...CATALOGUE] });
    const fixtures = new Map<string, Promise<unknown>>();
    const w: World = {
      owner,
      secrets: new Set([owner.token, sub.secret]),
      once: <T>(key: string, make: () => Promise<T>) => {
        if (!fixtures.has(key)) fixtures.set(key, make());
        return fixtures.get(key) as Promise<T>;
      },
    };
    for (const row of DRIVE) await row.drive(w);

    const received = await deliveriesOf(
      box,
      DRIVE.map((r) => r.event),
    );
    const hook = new Webhook(sub.secret);
    for (const row of DRIVE) {
      for (const delivery of received.get(row.event)!) {
        const payload = hook.verify(delivery.body, delivery.headers) as Payload;
        expect(Object.keys(payload), row.event).toEqual(["id", "event", "apiVersion", "createdAt", "data", "organization", "user"]);
        expect(payload, row.event).toMatchObject({
          id: delivery.headers["webhook-id"],
          event: row.event,
          organization: { id: owner.organizationId },
        });
        expect(typeof payload.data.object?.id, `${row.event}: data.object is the resource`).toBe("string");
        expect(payload.data.changes === null || Array.isArray(payload.data.changes), row.event).toBe(true);
        for (const secret of w.secrets) {
          // A code is six digits: it may not stand alone anywhere in the body (inside a hex hash or id it is chance).
          const found = /^\d{6}$/.test(secret)
            ? new RegExp(`(?<![0-9a-f])${secret}(?![0-9a-f])`).test(delivery.body)
            : delivery.body.includes(secret);
          expect(found, `${row.event} carries a token, code or secret`).toBe(false);
        }
        expect(delivery.body, `${row.event} carries a capability link`).not.toMatch(/\/(sign|survey)\/|[?&]signature=/);
      }
      await row.check?.(JSON.parse(received.get(row.event)![0]!.body) as Payload, w);
    }
    // Each transition emitted once: four leases sent (one signed, declined, voided, expired) and an upload (approved),
    // three opened, one sealed;
    // two notices passes, each with the four leases' deposits.
    expect(await stagedCounts(owner.organizationId, DOCUMENT_DESK)).toEqual({
      "document.created": 7,
      "document.updated": 1,
      "envelope.sent": 5,
      "envelope.opened": 3,
      "envelope.signer_signed": 1,
      "envelope.approved": 1,
      "envelope.completed": 1,
      "envelope.sealed": 1,
      "envelope.declined": 1,
      "envelope.voided": 1,
      "envelope.expired": 1,
      "template.created": 1,
      "template.updated": 1,
      "template.deleted": 1,
      "template.restored": 1,
      "obligation.due_soon": 4,
      "obligation.overdue": 4,
      "clickwrap.accepted": 1,
      "testimonial.approved": 1,
      "testimonial.published": 1,
      "survey.completed": 1,
      "referral.received": 1,
    });
  });
});

const DOCUMENT_DESK = CATALOGUE.filter((e) => /^(envelope|document|template|obligation|clickwrap|testimonial|survey|referral)\./.test(e));

/** How many events of each of `types` the organization's outbox holds. */
async function stagedCounts(organizationId: string, types: readonly string[]): Promise<Record<string, number>> {
  const { results } = await (await tenantDb(organizationId))
    .prepare(
      "SELECT type, COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type IN (SELECT value FROM json_each(?)) GROUP BY type",
    )
    .bind(organizationId, JSON.stringify(types))
    .all<{ type: string; n: number }>();
  return Object.fromEntries(results.map((r) => [r.type, r.n]));
}

describe("filters on the new resources", () => {
  it("a subscription accepts filter paths on envelope, testimonial and the rest, and a path on no resource is refused", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    for (const path of [
      "envelope.status",
      "document.formKey",
      "obligation.urgency",
      "clickwrap.subjectRef",
      "testimonial.rating",
      "survey.status",
      "referral.channel",
    ]) {
      expect(
        (
          await call("POST", "/v1/webhooks", {
            token: owner.token,
            body: { url: box.url, events: ["envelope.completed"], filters: { [path]: { ne: null } } },
          })
        ).status,
        path,
      ).toBe(201);
    }
    const refused = await call("POST", "/v1/webhooks", {
      token: owner.token,
      body: { url: box.url, events: ["envelope.completed"], filters: { "signature.status": { eq: "x" } } },
    });
    expect(refused.status).toBe(422);
  });

  it("conditions on the event's object hold back the events that fail them, resource by resource", { timeout: 60_000 }, async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    await subscribe(owner, {
      url: box.url,
      events: ["testimonial.approved", "envelope.sent", "envelope.completed"],
      filters: { "testimonial.rating": { gte: 4 }, "envelope.status": { eq: "completed" } },
    });
    for (const rating of [2, 5]) await move(owner, (await createTestimonial(owner, { rating })).id, "approve");
    const email = `${crypto.randomUUID()}@signer.test`;
    const doc = await createDocument(owner.token, leaseCanonical({ tenants: [{ name: "Fil Ter", email }] }));
    const sent = await sendForSignature(owner.token, doc.id, { signers: [{ name: "Fil Ter", email, role: "tenant" }] });
    await signAll(tokenOf(sent.links[0]!.url));
    await vi.waitFor(async () => expect(await box.count()).toBe(2), { timeout: 30_000, interval: 200 });
    await new Promise((r) => setTimeout(r, 1500)); // room for a delivery the filters should have held back
    const payloads = (await box.received()).map((r) => JSON.parse(r.body) as Payload);
    expect(payloads.map((p) => [p.event, p.data.object.rating ?? p.data.object.status]).sort()).toEqual([
      ["envelope.completed", "completed"],
      ["testimonial.approved", 5],
    ]);
  });
});

describe("obligation notices (the cron)", () => {
  it("emit each notice once per obligation, however often and however concurrently the pass runs, and a redelivered one is delivered once", {
    timeout: 60_000,
  }, async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url, events: ["obligation.due_soon", "obligation.overdue"] });
    const canonical = leaseCanonical();
    canonical.lease.deposit = { cents: 100_000, dueDate: { year: 2026, month: 12, day: 20 } } as typeof canonical.lease.deposit;
    await createDocument(owner.token, canonical);
    const db = createDb(await tenantDb(owner.organizationId));
    const pass = (day: string) => sendObligationNotices(env, db, { now: new Date(`${day}T09:00:00Z`) });
    // The pass runs over the whole shard, where other tests keep obligations of their own: what counts is this
    // organization's notices after each pass.
    const notices = async () => ({
      "obligation.due_soon": 0,
      "obligation.overdue": 0,
      ...(await stagedCounts(owner.organizationId, ["obligation.due_soon", "obligation.overdue"])),
    });
    // A week and a day before: nothing yet. Then inside the week, twice in a row and five at once.
    await pass("2026-12-12");
    expect(await notices()).toEqual({ "obligation.due_soon": 0, "obligation.overdue": 0 });
    await pass("2026-12-13");
    await pass("2026-12-13");
    expect(await notices()).toEqual({ "obligation.due_soon": 1, "obligation.overdue": 0 });
    await Promise.all(Array.from({ length: 5 }, () => pass("2026-12-19")));
    expect(await notices()).toEqual({ "obligation.due_soon": 1, "obligation.overdue": 0 });
    // Overdue from the day after the due date, once; the term's expiry (2027-12-31) is nowhere near.
    await Promise.all(Array.from({ length: 5 }, () => pass("2026-12-21")));
    expect(await notices()).toEqual({ "obligation.due_soon": 1, "obligation.overdue": 1 });
    await pass("2027-01-05");
    expect(await stagedCounts(owner.organizationId, ["obligation.due_soon", "obligation.overdue"])).toEqual({
      "obligation.due_soon": 1,
      "obligation.overdue": 1,
    });

    await vi.waitFor(async () => expect(await box.count()).toBe(2), { timeout: 20_000, interval: 200 });
    // The queue delivering the overdue notice again (the outbox cron re-sending it, say): still one delivery.
    const overdue = (await box.received()).map((r) => JSON.parse(r.body) as Payload).find((p) => p.event === "obligation.overdue")!;
    await env.EVENTS.send({ id: overdue.id, organizationId: owner.organizationId }, { contentType: "json" });
    await new Promise((r) => setTimeout(r, 2500));
    expect(await box.count()).toBe(2);
    const deliveries = (await (await call("GET", `/v1/webhooks/${sub.id}/deliveries`, { token: owner.token })).json()) as {
      data: { eventId: string }[];
    };
    expect(deliveries.data.filter((d) => d.eventId === overdue.id)).toHaveLength(1);
  });
});
