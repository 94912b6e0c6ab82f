import { call, json } from "./client";
import { createDocument, leaseCanonical, sendForSignature, signAll, tokenOf } from "./documents";
import { receiverUrl } from "./receiver";
import { createTestimonial, move, publishedTestimonial } from "./testimonials";
import { createDeal, createTask, documentForm } from "./deals";
import { createProperty, mlsListedProperty, mlsVars, photoForm, PNG_1X1, valuableProperty } from "./properties";
import { seedSurvey, STANDARD_QUESTIONS } from "./surveys";
import { tenantDb, type TestPrincipal } from "./factories";
import { buildPdf, uploaded } from "./uploads";
import { seedPond, seedPondLead } from "./ponds";
import type { Permission } from "../../src/platform/permissions";

export type Family = "crm" | "api" | "plants";

export interface MatrixRoute {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** The OpenAPI path, with {param} placeholders. */
  path: string;
  family: Family;
  /** A valid body, for routes that take one (a function when it names what the seed made, a photo id say). */
  body?: unknown;
  /** For routes on one object: makes it in the principal's organization and returns the path params naming it. */
  seed?: (owner: TestPrincipal) => Promise<Record<string, string>>;
  /** Path params of an object that exists nowhere. */
  unknown?: Record<string, string>;
  /** Configuration the route needs on top of the test env (an outside service the seed set up), from the seed's params. */
  vars?: (params: Record<string, string>) => Record<string, string>;
  /**
   * What the route reads beyond its own permission (platform/permissions.ts `routePermission`) for the object it acts
   * on: a key holding only the route's permission gets 403 insufficient_permission, one holding these too goes through
   * (issue 40). Absent: the route's permission is enough. The route matrix walks both keys.
   */
  objectReads?: Permission[];
}

/**
 * Every authenticated route of the API, in one table. The route matrix test walks it (no token → 401, another
 * organization's object → the same 404 as an unknown id, malformed JSON → 4xx) and checks that /openapi.json declares
 * no authenticated route missing from it. Each issue that adds routes adds them here.
 */
export const ROUTES: MatrixRoute[] = [
  { method: "POST", path: "/plants", family: "plants", body: { id: 1, name: "Matrix plant" } },
  {
    method: "DELETE",
    path: "/plants/{id}",
    family: "plants",
    seed: async (owner) => {
      const id = String(Math.floor(Math.random() * 1e9));
      const res = await call("POST", "/plants", { token: owner.token, body: { id: Number(id), name: "Seeded" } });
      if (res.status !== 200) throw new Error(`seeding a plant failed: ${res.status}`);
      return { id };
    },
    unknown: { id: "987654321987" },
  },
  ...webhookRoutes(),
];

/** A webhook of `owner` pointing at the test receiver's sink (always 200). */
async function seedWebhook(owner: TestPrincipal): Promise<string> {
  const res = await call("POST", "/v1/webhooks", {
    token: owner.token,
    body: { url: `${receiverUrl()}/hooks/sink`, events: ["contact.created"] },
  });
  if (res.status !== 201) throw new Error(`seeding a webhook failed: ${res.status} ${await res.text()}`);
  return (await json(res)).data.id;
}

function webhookRoutes(): MatrixRoute[] {
  const one = async (owner: TestPrincipal) => ({ id: await seedWebhook(owner) });
  // Every write of a subscription needs the read permission of its events (seeded with contact.created).
  const contacts: Permission[] = ["contacts:read"];
  return [
    {
      method: "POST",
      path: "/v1/webhooks",
      family: "crm",
      body: { url: `${receiverUrl()}/hooks/sink`, events: ["contact.created"] },
      objectReads: contacts,
    },
    { method: "GET", path: "/v1/webhooks", family: "crm" },
    { method: "GET", path: "/v1/webhooks/{id}", family: "crm", seed: one },
    { method: "PATCH", path: "/v1/webhooks/{id}", family: "crm", seed: one, body: { description: "renamed" }, objectReads: contacts },
    { method: "DELETE", path: "/v1/webhooks/{id}", family: "crm", seed: one },
    { method: "POST", path: "/v1/webhooks/{id}/test", family: "crm", seed: one },
    { method: "GET", path: "/v1/webhooks/{id}/deliveries", family: "crm", seed: one },
    // Endpoints that heal (issue 32).
    {
      method: "POST",
      path: "/v1/webhooks/{id}/rotate-secret",
      family: "crm",
      seed: one,
      body: { overlapSeconds: 3600 },
      objectReads: contacts,
    },
    {
      method: "POST",
      path: "/v1/webhooks/{id}/recover",
      family: "crm",
      seed: one,
      body: () => ({ since: new Date(Date.now() - 60_000).toISOString() }),
      objectReads: contacts,
    },
    { method: "GET", path: "/v1/events", family: "crm" },
    {
      method: "POST",
      path: "/v1/webhooks/{id}/deliveries/{deliveryId}/replay",
      family: "crm",
      objectReads: contacts,
      seed: async (owner) => {
        const id = await seedWebhook(owner);
        const test = await call("POST", `/v1/webhooks/${id}/test`, { token: owner.token });
        const deliveryId = (await json(test)).data.id as string;
        // Replay needs a settled delivery: wait for the sink to acknowledge this one.
        for (let i = 0; i < 100; i++) {
          const log = await json(await call("GET", `/v1/webhooks/${id}/deliveries`, { token: owner.token }));
          if (log.data[0]?.status === "delivered") break;
          await new Promise((r) => setTimeout(r, 100));
        }
        return { id, deliveryId };
      },
    },
    {
      method: "POST",
      path: "/v1/webhooks/{id}/events/{eventId}/replay",
      family: "crm",
      objectReads: contacts,
      seed: async (owner) => {
        const id = await seedWebhook(owner);
        const eventId = crypto.randomUUID();
        await (await tenantDb(owner.organizationId))
          .prepare(
            "INSERT INTO outbox_events (id, organization_id, type, actor, occurred_at, data, sent_at) VALUES (?, ?, 'contact.created', ?, ?, ?, ?)",
          )
          .bind(
            eventId,
            owner.organizationId,
            JSON.stringify({ type: "user", userId: owner.userId }),
            new Date().toISOString(),
            JSON.stringify({ object: { id: "c1" } }),
            new Date().toISOString(),
          )
          .run();
        return { id, eventId };
      },
    },
  ];
}

/** A seed whose object was then deleted: it waits in the trash (issue 21). */
const trashed =
  (seed: (owner: TestPrincipal) => Promise<Record<string, string>>, collection: string) =>
  async (owner: TestPrincipal): Promise<Record<string, string>> => {
    const params = await seed(owner);
    const res = await call("DELETE", `${collection}/${params.id}`, { token: owner.token });
    if (res.status !== 200) throw new Error(`deleting the seeded object failed: ${res.status} ${await res.text()}`);
    return params;
  };

// The trash (issue 21).
ROUTES.push({ method: "GET", path: "/v1/trash", family: "crm" });

async function seedContact(owner: TestPrincipal): Promise<Record<string, string>> {
  const res = await call("POST", "/v1/contacts", {
    token: owner.token,
    body: { firstName: "Seed", lastName: "Contact", email: `${crypto.randomUUID()}@seed.test` },
  });
  if (res.status !== 201) throw new Error(`seeding a contact failed: ${res.status} ${await res.text()}`);
  return { id: ((await res.json()) as { data: { id: string } }).data.id };
}
const unknownContact = { id: "00000000-0000-4000-8000-00000000c0de" };

// Contacts (issue 3).
ROUTES.push(
  { method: "GET", path: "/v1/contacts", family: "crm" },
  { method: "POST", path: "/v1/contacts", family: "crm", body: { firstName: "Matrix", lastName: "Row", email: "matrix@row.test" } },
  { method: "GET", path: "/v1/contacts/tags", family: "crm" },
  // Lead intake (issue 33).
  { method: "POST", path: "/v1/leads", family: "crm", body: { source: "WEBSITE", person: { emails: ["matrix@lead.test"] } } },
  { method: "PATCH", path: "/v1/contacts/bulk", family: "crm", body: { contactIds: ["x"], updates: { status: "ACTIVE" } } },
  { method: "GET", path: "/v1/contacts/{id}", family: "crm", seed: seedContact, unknown: unknownContact },
  { method: "PUT", path: "/v1/contacts/{id}", family: "crm", body: { notes: "changed" }, seed: seedContact, unknown: unknownContact },
  { method: "DELETE", path: "/v1/contacts/{id}", family: "crm", seed: seedContact, unknown: unknownContact },
  { method: "POST", path: "/v1/contacts/{id}/restore", family: "crm", seed: trashed(seedContact, "/v1/contacts"), unknown: unknownContact },
  { method: "GET", path: "/v1/contacts/{id}/activities", family: "crm", seed: seedContact, unknown: unknownContact },
  {
    method: "POST",
    path: "/v1/contacts/{id}/activities",
    family: "crm",
    body: { type: "NOTE", description: "hi" },
    seed: seedContact,
    unknown: unknownContact,
  },
  { method: "POST", path: "/v1/contacts/{id}/tags", family: "crm", body: { tags: ["vip"] }, seed: seedContact, unknown: unknownContact },
);

// Leads kept for review (issue 40): a phone-only lead that matched nobody.
async function seedLeadReview(owner: TestPrincipal): Promise<Record<string, string>> {
  const res = await call("POST", "/v1/leads", {
    token: owner.token,
    body: { source: "WEBSITE", person: { firstName: "Seed", phones: ["+1 415 555 0198"] } },
  });
  if (res.status !== 202) throw new Error(`seeding a lead review failed: ${res.status} ${await res.text()}`);
  return { id: ((await res.json()) as { data: { reviewId: string } }).data.reviewId };
}
const unknownReview = { id: "00000000-0000-4000-8000-0000000ee040" };
ROUTES.push(
  { method: "GET", path: "/v1/leads/reviews", family: "crm" },
  {
    method: "POST",
    path: "/v1/leads/reviews/{id}/accept",
    family: "crm",
    body: { email: "matrix@review.test" },
    seed: seedLeadReview,
    unknown: unknownReview,
  },
  { method: "DELETE", path: "/v1/leads/reviews/{id}", family: "crm", seed: seedLeadReview, unknown: unknownReview },
);

// Duplicates (issue 33): a list, like the tags.
ROUTES.push({ method: "GET", path: "/v1/contacts/duplicates", family: "crm" });

// Merge (issue 33): the seed makes the target and a source; another organization's target is an unknown one.
ROUTES.push({
  method: "POST",
  path: "/v1/contacts/{id}/merge",
  family: "crm",
  body: (params: Record<string, string>) => ({ sourceIds: [params.source ?? "00000000-0000-4000-8000-00000000beef"] }),
  seed: async (owner) => ({ ...(await seedContact(owner)), source: (await seedContact(owner)).id! }),
  unknown: unknownContact,
});

// Communications (issue 32).
ROUTES.push(
  { method: "GET", path: "/v1/contacts/{id}/communications", family: "crm", seed: seedContact, unknown: unknownContact },
  {
    method: "POST",
    path: "/v1/contacts/{id}/communications",
    family: "crm",
    body: { type: "email", direction: "outbound", subject: "Hello" },
    seed: seedContact,
    unknown: unknownContact,
  },
);

/** The route's body for the object `params` names. */
export const varsOf = (route: { vars?: (p: Record<string, string>) => Record<string, string> }, params: Record<string, string>) =>
  route.vars?.(params);

export const bodyOf = (route: MatrixRoute, params: Record<string, string>) =>
  typeof route.body === "function" ? (route.body as (p: Record<string, string>) => unknown)(params) : route.body;

export const fillPath = (path: string, params: Record<string, string> = {}) =>
  path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`no value for {${name}} in ${path}`);
    return encodeURIComponent(value);
  });

// Documents and signatures (issue 7).
async function seedDocument(owner: TestPrincipal): Promise<Record<string, string>> {
  return { id: (await createDocument(owner.token)).id };
}
async function seedEnvelope(owner: TestPrincipal): Promise<Record<string, string>> {
  const { id } = await seedDocument(owner);
  return { envelopeId: (await sendForSignature(owner.token, id!)).envelopeId };
}
/** An envelope every signer has signed, with its certificate of completion and its sealed PDF generated. */
export async function seedCompletedEnvelope(owner: TestPrincipal): Promise<Record<string, string>> {
  const { id } = await seedDocument(owner);
  const sent = await sendForSignature(owner.token, id!);
  for (const link of sent.links) await signAll(tokenOf(link.url));
  for (let i = 0; i < 200; i++) {
    const envelope = await json(await call("GET", `/api/signatures/${sent.envelopeId}`, { token: owner.token }));
    if (envelope.certificate.status === "ready" && envelope.signedDocument.status === "ready") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { envelopeId: sent.envelopeId };
}
/** An open envelope's first signer (issue 29: the resend route). */
async function seedSigner(owner: TestPrincipal): Promise<Record<string, string>> {
  const { id } = await seedDocument(owner);
  const sent = await sendForSignature(owner.token, id!);
  return { envelopeId: sent.envelopeId, signerId: sent.links[0]!.signerId };
}
/**
 * An open envelope of an uploaded PDF whose one recipient signs embedded, or in person hosted by the owner (issue 45:
 * the view and host-session routes).
 */
export async function seedHostedSigner(
  owner: TestPrincipal,
  how: "embedded" | "inPerson",
  through: SeedCall = appCall,
): Promise<{ envelopeId: string; signerId: string }> {
  const upload = await through("POST", "/api/documents/uploads?title=Hosted", {
    token: owner.token,
    raw: await buildPdf([{}]),
    headers: { "content-type": "application/pdf" },
  });
  const sent = await through("POST", `/api/documents/${upload.document.id}/signature`, {
    token: owner.token,
    body: {
      recipients: [
        {
          key: "h",
          name: "Hosted Signer",
          email: `${crypto.randomUUID()}@hosted.test`,
          role: "signer",
          ...(how === "embedded" ? { embedded: true } : { inPerson: { hostUserId: owner.userId } }),
        },
      ],
      fields: [{ recipient: "h", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8 }],
    },
  });
  return { envelopeId: sent.envelopeId, signerId: sent.envelope.signers[0].id };
}
/** A seeding request answered 2xx, its JSON body (the fault table passes its own, on bindings that never fail). */
type SeedCall = (
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; raw?: Uint8Array; headers?: Record<string, string> },
) => Promise<any>;
const appCall: SeedCall = async (method, path, opts) => {
  const res = await call(method, path, { token: opts.token, body: opts.body, rawBody: opts.raw, headers: opts.headers });
  if (res.status >= 300) throw new Error(`seeding ${method} ${path} failed: ${res.status}`);
  return json(res);
};
/** A view request the test env takes (https origins). */
export const VIEW_BODY = { returnUrl: "https://tm.example.test/back", frameAncestors: ["https://tm.example.test"] };
const unknownEnvelope = { envelopeId: "00000000-0000-4000-8000-0000000e0e0e" };
const unknownDocument = { id: "00000000-0000-4000-8000-00000000d0c0" };

ROUTES.push(
  { method: "POST", path: "/api/documents", family: "api", body: { formKey: "on/standard-lease", canonical: leaseCanonical() } },
  { method: "GET", path: "/api/documents", family: "api" },
  { method: "GET", path: "/api/documents/usage", family: "api" },
  { method: "GET", path: "/api/documents/obligations", family: "api" },
  { method: "GET", path: "/api/documents/forms", family: "api" },
  { method: "GET", path: "/api/documents/search", family: "api" },
  { method: "POST", path: "/api/documents/draft", family: "api", body: { prompt: "A one-year lease of 1 Queen St W, Toronto" } },
  { method: "GET", path: "/api/documents/{id}", family: "api", seed: seedDocument, unknown: unknownDocument },
  // The body is a PDF (test/documents/uploads.test.ts sends real ones); the matrix's JSON bodies get 415.
  { method: "POST", path: "/api/documents/uploads", family: "api" },
  { method: "GET", path: "/api/documents/{id}/pdf", family: "api", seed: seedDocument, unknown: unknownDocument },
  { method: "POST", path: "/api/documents/{id}/signature", family: "api", body: {}, seed: seedDocument, unknown: unknownDocument },
  { method: "GET", path: "/api/documents/{id}/signatures", family: "api", seed: seedDocument, unknown: unknownDocument },
  { method: "GET", path: "/api/signatures/{envelopeId}", family: "api", seed: seedEnvelope, unknown: unknownEnvelope },
  { method: "DELETE", path: "/api/signatures/{envelopeId}", family: "api", seed: seedEnvelope, unknown: unknownEnvelope },
  { method: "GET", path: "/api/signatures/{envelopeId}/audit", family: "api", seed: seedEnvelope, unknown: unknownEnvelope },
  { method: "GET", path: "/api/signatures/{envelopeId}/certificate", family: "api", seed: seedCompletedEnvelope, unknown: unknownEnvelope },
  // Issue 20: the sealed, signed PDF and the organization's signing defaults.
  { method: "GET", path: "/api/signatures/{envelopeId}/document", family: "api", seed: seedCompletedEnvelope, unknown: unknownEnvelope },
  { method: "GET", path: "/api/signatures/settings", family: "api" },
  { method: "PUT", path: "/api/signatures/settings", family: "api", body: { signerVerification: "code" } },
  // Issue 29: a signer's new link.
  {
    method: "POST",
    path: "/api/signatures/{envelopeId}/signers/{signerId}/resend",
    family: "api",
    seed: seedSigner,
    unknown: { ...unknownEnvelope, signerId: "00000000-0000-4000-8000-00000000519e" },
  },
  // Issue 45: an embedded recipient's single-use view URL, an in-person recipient's host session.
  {
    method: "POST",
    path: "/api/signatures/{envelopeId}/signers/{signerId}/view",
    family: "api",
    body: VIEW_BODY,
    seed: (owner) => seedHostedSigner(owner, "embedded"),
    unknown: { ...unknownEnvelope, signerId: "00000000-0000-4000-8000-00000000519e" },
  },
  {
    method: "POST",
    path: "/api/signatures/{envelopeId}/signers/{signerId}/host-session",
    family: "api",
    seed: (owner) => seedHostedSigner(owner, "inPerson"),
    unknown: { ...unknownEnvelope, signerId: "00000000-0000-4000-8000-00000000519e" },
  },
);

// Reputation (issue 8).
const testimonialIn = (state: "PENDING" | "APPROVED" | "PUBLISHED") => async (owner: TestPrincipal) => {
  const t = state === "PUBLISHED" ? await publishedTestimonial(owner) : await createTestimonial(owner);
  if (state === "APPROVED") await move(owner, t.id, "approve");
  return { id: t.id };
};
const unknownTestimonial = { id: "00000000-0000-4000-8000-0000000a11ce" };
ROUTES.push(
  { method: "GET", path: "/api/reputation/testimonials", family: "api" },
  {
    method: "POST",
    path: "/api/reputation/testimonials",
    family: "api",
    body: { agentUserId: "x", category: "BUYER", rating: 5, body: "Great" },
  },
  { method: "GET", path: "/api/reputation/testimonials/{id}", family: "api", seed: testimonialIn("PENDING"), unknown: unknownTestimonial },
  {
    method: "PATCH",
    path: "/api/reputation/testimonials/{id}",
    family: "api",
    body: { sortOrder: 3 },
    seed: testimonialIn("PENDING"),
    unknown: unknownTestimonial,
  },
  {
    method: "POST",
    path: "/api/reputation/testimonials/{id}/approve",
    family: "api",
    seed: testimonialIn("PENDING"),
    unknown: unknownTestimonial,
  },
  {
    method: "POST",
    path: "/api/reputation/testimonials/{id}/publish",
    family: "api",
    seed: testimonialIn("APPROVED"),
    unknown: unknownTestimonial,
  },
  {
    method: "POST",
    path: "/api/reputation/testimonials/{id}/unpublish",
    family: "api",
    seed: testimonialIn("PUBLISHED"),
    unknown: unknownTestimonial,
  },
  {
    method: "POST",
    path: "/api/reputation/testimonials/{id}/reject",
    family: "api",
    seed: testimonialIn("PENDING"),
    unknown: unknownTestimonial,
  },
  { method: "GET", path: "/api/reputation/aggregate", family: "api" },
  { method: "GET", path: "/api/reputation/profile", family: "api" },
  { method: "PUT", path: "/api/reputation/profile", family: "api", body: { draftConfig: { displayName: "Matrix" } } },
  { method: "POST", path: "/api/reputation/profile/publish", family: "api", body: {} },
  { method: "DELETE", path: "/api/reputation/profile", family: "api" },
);

// Properties (issue 9).
const seedProperty = async (owner: TestPrincipal) => ({ id: (await createProperty(owner.token)).id });
const unknownProperty = { id: "00000000-0000-4000-8000-0000000000b9" };
async function seedPropertyWithPhoto(owner: TestPrincipal) {
  const { id } = await seedProperty(owner);
  const res = await call("POST", `/v1/properties/${id}/photos`, { token: owner.token, body: photoForm([{ bytes: PNG_1X1 }]) });
  return { id, photo: (await json(res)).data[0].id as string };
}
async function seedValuedProperty(owner: TestPrincipal) {
  const { id } = await valuableProperty(owner.token);
  await call("POST", `/v1/properties/${id}/valuation`, { token: owner.token });
  return { id };
}
ROUTES.push(
  { method: "GET", path: "/v1/properties", family: "crm" },
  {
    method: "POST",
    path: "/v1/properties",
    family: "crm",
    body: {
      address: { street: "1 Matrix Rd", city: "Austin", state: "TX", zipCode: "78701" },
      details: { propertyType: "CONDO" },
      listing: { listPrice: 1 },
    },
  },
  { method: "GET", path: "/v1/properties/{id}", family: "crm", seed: seedProperty, unknown: unknownProperty },
  {
    method: "PUT",
    path: "/v1/properties/{id}",
    family: "crm",
    body: { details: { bedrooms: 2 } },
    seed: seedProperty,
    unknown: unknownProperty,
  },
  { method: "DELETE", path: "/v1/properties/{id}", family: "crm", seed: seedProperty, unknown: unknownProperty },
  {
    method: "POST",
    path: "/v1/properties/{id}/restore",
    family: "crm",
    seed: trashed(seedProperty, "/v1/properties"),
    unknown: unknownProperty,
  },
  {
    method: "POST",
    path: "/v1/properties/{id}/photos",
    family: "crm",
    body: () => photoForm([{ bytes: PNG_1X1 }]),
    seed: seedProperty,
    unknown: unknownProperty,
  },
  {
    method: "PUT",
    path: "/v1/properties/{id}/photos/order",
    family: "crm",
    body: (p: Record<string, string>) => ({ photoOrder: [{ id: p.photo ?? "x", order: 3 }] }),
    seed: seedPropertyWithPhoto,
    unknown: unknownProperty,
  },
  { method: "GET", path: "/v1/properties/{id}/valuation", family: "crm", seed: seedValuedProperty, unknown: unknownProperty },
  {
    method: "POST",
    path: "/v1/properties/{id}/valuation",
    family: "crm",
    seed: async (owner) => ({ id: (await valuableProperty(owner.token)).id }),
    unknown: unknownProperty,
  },
  { method: "GET", path: "/v1/properties/{id}/analytics", family: "crm", seed: seedProperty, unknown: unknownProperty },
  {
    method: "POST",
    path: "/v1/properties/{id}/signals",
    family: "crm",
    body: { type: "VIEW", visitorId: "matrix" },
    seed: seedProperty,
    unknown: unknownProperty,
  },
  {
    method: "POST",
    path: "/v1/properties/{id}/reports",
    family: "crm",
    body: { reportType: "LISTING_SHEET" },
    seed: seedProperty,
    unknown: unknownProperty,
  },
  {
    method: "POST",
    path: "/v1/properties/{id}/mls-sync",
    family: "crm",
    seed: (owner) => mlsListedProperty(owner.token),
    unknown: unknownProperty,
    vars: mlsVars,
  },
);

// Deals (issue 10).
const seedDeal = async (owner: TestPrincipal) => ({ id: (await createDeal(owner.token)).id });
const unknownDeal = { id: "00000000-0000-4000-8000-0000000000d1" };
ROUTES.push(
  { method: "GET", path: "/v1/deals", family: "crm" },
  {
    method: "POST",
    path: "/v1/deals",
    family: "crm",
    body: (p: Record<string, string>) => ({
      title: "Matrix deal",
      type: "SALE",
      amount: 1,
      contactId: p.contactId ?? "00000000-0000-4000-8000-0000000000c1",
    }),
  },
  { method: "GET", path: "/v1/deals/pipeline", family: "crm" },
  { method: "GET", path: "/v1/deals/analytics", family: "crm" },
  { method: "GET", path: "/v1/deals/{id}", family: "crm", seed: seedDeal, unknown: unknownDeal },
  { method: "PUT", path: "/v1/deals/{id}", family: "crm", body: { notes: "matrix" }, seed: seedDeal, unknown: unknownDeal },
  { method: "DELETE", path: "/v1/deals/{id}", family: "crm", seed: seedDeal, unknown: unknownDeal },
  { method: "POST", path: "/v1/deals/{id}/restore", family: "crm", seed: trashed(seedDeal, "/v1/deals"), unknown: unknownDeal },
  { method: "POST", path: "/v1/deals/{id}/move", family: "crm", body: { stage: "QUALIFIED" }, seed: seedDeal, unknown: unknownDeal },
  { method: "GET", path: "/v1/deals/{id}/tasks", family: "crm", seed: seedDeal, unknown: unknownDeal },
  { method: "POST", path: "/v1/deals/{id}/tasks", family: "crm", body: { title: "Matrix task" }, seed: seedDeal, unknown: unknownDeal },
  {
    method: "POST",
    path: "/v1/deals/{id}/tasks/{taskId}/complete",
    family: "crm",
    seed: async (owner) => {
      const { id } = await seedDeal(owner);
      return { id, taskId: (await createTask(owner.token, id)).id };
    },
    unknown: { ...unknownDeal, taskId: "00000000-0000-4000-8000-0000000000d2" },
  },
  { method: "GET", path: "/v1/deals/{id}/documents", family: "crm", seed: seedDeal, unknown: unknownDeal },
  { method: "POST", path: "/v1/deals/{id}/documents", family: "crm", body: () => documentForm(), seed: seedDeal, unknown: unknownDeal },
  { method: "GET", path: "/v1/deals/{id}/activities", family: "crm", seed: seedDeal, unknown: unknownDeal },
);

// Clickwrap (issue 11).
async function seedAgreement(owner: TestPrincipal) {
  const res = await call("POST", "/api/clickwrap", {
    token: owner.token,
    body: { key: `matrix-${crypto.randomUUID()}`, title: "Matrix terms", body: "Be kind." },
  });
  if (res.status !== 201) throw new Error(`seeding an agreement failed: ${res.status} ${await res.text()}`);
  const { id, versionHash } = await json(res);
  return { agreementId: id as string, versionHash: versionHash as string };
}
const unknownAgreement = { agreementId: "00000000-0000-4000-8000-0000000000c7", versionHash: "0".repeat(64) };
ROUTES.push(
  { method: "POST", path: "/api/clickwrap", family: "api", body: { key: "matrix", title: "Matrix terms", body: "Be kind." } },
  { method: "GET", path: "/api/clickwrap", family: "api" },
  { method: "GET", path: "/api/clickwrap/{agreementId}", family: "api", seed: seedAgreement, unknown: unknownAgreement },
  {
    method: "GET",
    path: "/api/clickwrap/{agreementId}/versions/{versionHash}",
    family: "api",
    seed: seedAgreement,
    unknown: unknownAgreement,
  },
  { method: "POST", path: "/api/clickwrap/{agreementId}/deactivate", family: "api", seed: seedAgreement, unknown: unknownAgreement },
  { method: "POST", path: "/api/clickwrap/{agreementId}/activate", family: "api", seed: seedAgreement, unknown: unknownAgreement },
  { method: "GET", path: "/api/clickwrap/{agreementId}/acceptances", family: "api", seed: seedAgreement, unknown: unknownAgreement },
);

// Templates (issue 45).
async function seedTemplate(owner: TestPrincipal): Promise<Record<string, string>> {
  const doc = await uploaded(owner.token, await buildPdf([{}]));
  const res = await call("POST", "/api/templates", { token: owner.token, body: { documentId: doc.id, ...MATRIX_TEMPLATE } });
  if (res.status !== 201) throw new Error(`seeding a template failed: ${res.status} ${await res.text()}`);
  return { id: (await json(res)).template.id as string };
}
const MATRIX_TEMPLATE = {
  name: "Matrix template",
  roles: [{ key: "buyer", label: "Buyer", role: "signer" }],
  fields: [{ role: "buyer", type: "signature", name: "sig", page: 1, x: 10, y: 80, width: 30, height: 6 }],
};
const unknownTemplate = { id: "00000000-0000-4000-8000-0000000007e1" };
const buyer = { buyer: { name: "Matrix Buyer", email: "matrix-buyer@example.test" } };
ROUTES.push(
  { method: "POST", path: "/api/templates", family: "api", body: { documentId: "x", ...MATRIX_TEMPLATE } },
  { method: "GET", path: "/api/templates", family: "api" },
  { method: "GET", path: "/api/templates/{id}", family: "api", seed: seedTemplate, unknown: unknownTemplate },
  { method: "PATCH", path: "/api/templates/{id}", family: "api", body: { name: "Renamed" }, seed: seedTemplate, unknown: unknownTemplate },
  { method: "DELETE", path: "/api/templates/{id}", family: "api", seed: seedTemplate, unknown: unknownTemplate },
  {
    method: "POST",
    path: "/api/templates/{id}/restore",
    family: "api",
    seed: async (owner) => {
      const params = await seedTemplate(owner);
      await call("DELETE", `/api/templates/${params.id}`, { token: owner.token });
      return params;
    },
    unknown: unknownTemplate,
  },
  {
    method: "POST",
    path: "/api/templates/{id}/use",
    family: "api",
    body: { recipients: buyer },
    seed: seedTemplate,
    unknown: unknownTemplate,
    objectReads: ["templates:read"],
  },
  {
    method: "POST",
    path: "/api/templates/{id}/public-link",
    family: "api",
    body: { role: "buyer" },
    seed: seedTemplate,
    unknown: unknownTemplate,
  },
);

// Referrals (issue 13).
ROUTES.push(
  { method: "GET", path: "/api/reputation/referrals", family: "api" },
  { method: "POST", path: "/api/reputation/referrals", family: "api", body: { agentUserId: "x", referredName: "Matrix Referral" } },
);

// Surveys (issue 13).
const unknownSurvey = { id: "00000000-0000-4000-8000-0000000005e1" };
ROUTES.push(
  { method: "GET", path: "/api/reputation/surveys", family: "api" },
  { method: "POST", path: "/api/reputation/surveys", family: "api", body: { recipientPersonId: "x", agentUserId: "x", channel: "LINK" } },
  { method: "GET", path: "/api/reputation/surveys/templates", family: "api" },
  {
    method: "POST",
    path: "/api/reputation/surveys/templates",
    family: "api",
    body: { name: "Matrix survey", questions: STANDARD_QUESTIONS },
  },
  { method: "GET", path: "/api/reputation/surveys/{id}", family: "api", seed: (owner) => seedSurvey(owner), unknown: unknownSurvey },
  {
    method: "POST",
    path: "/api/reputation/surveys/{id}/reissue",
    family: "api",
    seed: (owner) => seedSurvey(owner, "EMAIL"),
    unknown: unknownSurvey,
  },
  { method: "POST", path: "/api/reputation/surveys/{id}/skip", family: "api", seed: (owner) => seedSurvey(owner), unknown: unknownSurvey },
);

// The organization and its users (issue 32).
async function seedUser(owner: TestPrincipal): Promise<Record<string, string>> {
  const res = await call("POST", "/v1/users", {
    token: owner.token,
    body: { email: `${crypto.randomUUID()}@seed.test`, name: "Seed User" },
  });
  if (res.status !== 201) throw new Error(`seeding a user failed: ${res.status} ${await res.text()}`);
  return { id: ((await res.json()) as { data: { id: string } }).data.id };
}
const unknownUser = { id: "00000000-0000-4000-8000-0000000005e2" };
ROUTES.push(
  { method: "GET", path: "/v1/organization", family: "crm" },
  { method: "PATCH", path: "/v1/organization", family: "crm", body: { displayName: "Matrix Realty" } },
  { method: "GET", path: "/v1/users", family: "crm" },
  { method: "POST", path: "/v1/users", family: "crm", body: { email: "matrix.user@row.test", name: "Matrix User" } },
  { method: "GET", path: "/v1/users/{id}", family: "crm", seed: seedUser, unknown: unknownUser },
  { method: "PATCH", path: "/v1/users/{id}", family: "crm", body: { name: "Matrix Renamed" }, seed: seedUser, unknown: unknownUser },
  { method: "POST", path: "/v1/users/{id}/invitation", family: "crm", seed: seedUser, unknown: unknownUser },
);

// API keys and integrations (issue 32).
async function seedApiKey(owner: TestPrincipal): Promise<Record<string, string>> {
  const res = await call("POST", "/v1/api-keys", { token: owner.token, body: { name: "Seeded key", permissions: ["contacts:read"] } });
  if (res.status !== 201) throw new Error(`seeding an API key failed: ${res.status} ${await res.text()}`);
  return { id: (await json(res)).data.id };
}
ROUTES.push(
  // A key carries only what its creator's credential holds: here contacts:read.
  {
    method: "POST",
    path: "/v1/api-keys",
    family: "crm",
    body: { name: "Matrix key", permissions: ["contacts:read"] },
    objectReads: ["contacts:read"],
  },
  { method: "GET", path: "/v1/api-keys", family: "crm" },
  { method: "DELETE", path: "/v1/api-keys/{id}", family: "crm", seed: seedApiKey, unknown: { id: "00000000-0000-4000-8000-0000000a9c1e" } },
  { method: "GET", path: "/v1/integrations", family: "crm" },
);

// Custom fields (issue 33).
async function seedCustomField(owner: TestPrincipal): Promise<Record<string, string>> {
  const res = await call("POST", "/v1/custom-fields", {
    token: owner.token,
    body: { object: "property", key: `seeded_${crypto.randomUUID().slice(0, 8)}`, label: "Seeded", type: "text" },
  });
  if (res.status !== 201) throw new Error(`seeding a custom field failed: ${res.status} ${await res.text()}`);
  return { id: (await json(res)).data.id };
}
ROUTES.push(
  {
    method: "POST",
    path: "/v1/custom-fields",
    family: "crm",
    body: { object: "contact", key: "matrix_field", label: "Matrix field", type: "select", options: ["a", "b"] },
  },
  { method: "GET", path: "/v1/custom-fields", family: "crm" },
  {
    method: "DELETE",
    path: "/v1/custom-fields/{id}",
    family: "crm",
    seed: seedCustomField,
    unknown: { id: "00000000-0000-4000-8000-0000000c0f1d" },
  },
);
// Imports (issue 33).
async function seedImport(owner: TestPrincipal): Promise<Record<string, string>> {
  const res = await call("POST", "/v1/imports", {
    token: owner.token,
    body: { kind: "contacts", rows: [{ firstName: "Seed", lastName: "Import", email: `${crypto.randomUUID()}@seed.test` }] },
  });
  if (res.status !== 202) throw new Error(`seeding an import failed: ${res.status} ${await res.text()}`);
  return { id: ((await res.json()) as { data: { id: string } }).data.id };
}
const unknownImport = { id: "00000000-0000-4000-8000-0000000001e0" };
ROUTES.push(
  {
    method: "POST",
    path: "/v1/imports",
    family: "crm",
    body: { kind: "contacts", rows: [{ firstName: "Matrix", lastName: "Row", email: "matrix.import@row.test" }] },
  },
  { method: "GET", path: "/v1/imports/{id}", family: "crm", seed: seedImport, unknown: unknownImport },
  { method: "GET", path: "/v1/imports/{id}/errors", family: "crm", seed: seedImport, unknown: unknownImport },
  { method: "POST", path: "/v1/imports/{id}/cancel", family: "crm", seed: seedImport, unknown: unknownImport },
);
// Exports (issue 33 part 5).
ROUTES.push(
  { method: "GET", path: "/v1/contacts/export", family: "crm", objectReads: ["contacts:read"] },
  { method: "GET", path: "/v1/deals/export", family: "crm", objectReads: ["deals:read"] },
  { method: "GET", path: "/v1/properties/export", family: "crm", objectReads: ["properties:read"] },
);
async function seedExport(owner: TestPrincipal): Promise<Record<string, string>> {
  const res = await call("POST", "/v1/organization/export", { token: owner.token });
  if (res.status !== 202) throw new Error(`starting an export failed: ${res.status} ${await res.text()}`);
  return { id: (await json(res)).data.id };
}
ROUTES.push(
  {
    method: "GET",
    path: "/v1/contacts/{id}/export",
    family: "crm",
    seed: seedContact,
    unknown: unknownContact,
    objectReads: ["contacts:read"],
  },
  { method: "POST", path: "/v1/organization/export", family: "crm" },
  {
    method: "GET",
    path: "/v1/organization/exports/{id}",
    family: "crm",
    seed: seedExport,
    unknown: { id: "00000000-0000-4000-8000-0000000e4b07" },
  },
);

// Ponds and lead routing (issue 46).
const unknownPond = { id: "00000000-0000-4000-8000-0000000ee046" };
ROUTES.push(
  { method: "GET", path: "/v1/ponds", family: "crm" },
  { method: "POST", path: "/v1/ponds", family: "crm", body: { name: "Matrix pond", members: [] } },
  { method: "GET", path: "/v1/ponds/{id}", family: "crm", seed: seedPond, unknown: unknownPond },
  { method: "PATCH", path: "/v1/ponds/{id}", family: "crm", body: { name: "Renamed pond" }, seed: seedPond, unknown: unknownPond },
  { method: "DELETE", path: "/v1/ponds/{id}", family: "crm", seed: seedPond, unknown: unknownPond },
  { method: "GET", path: "/v1/ponds/{id}/contacts", family: "crm", seed: seedPond, unknown: unknownPond },
  { method: "POST", path: "/v1/contacts/{id}/claim", family: "crm", seed: seedPondLead, unknown: unknownContact },
  { method: "GET", path: "/v1/contacts/{id}/routing", family: "crm", seed: seedPondLead, unknown: unknownContact },
  {
    method: "POST",
    path: "/v1/leads/route-preview",
    family: "crm",
    body: { source: "WEBSITE", person: { emails: ["matrix@preview.test"] } },
  },
);

// Smart lists (issue 46): a list's contacts read the contacts too.
async function seedSmartList(owner: TestPrincipal): Promise<Record<string, string>> {
  const res = await call("POST", "/v1/smart-lists", { token: owner.token, body: { name: "Seeded", query: { assignedTo: "none" } } });
  if (res.status !== 201) throw new Error(`seeding a smart list failed: ${res.status} ${await res.text()}`);
  return { id: (await json(res)).data.id };
}
const unknownSmartList = { id: "00000000-0000-4000-8000-00000005a7a1" };
ROUTES.push(
  { method: "POST", path: "/v1/smart-lists", family: "crm", body: { name: "Matrix list", query: { lastContactedAt: "never" } } },
  { method: "GET", path: "/v1/smart-lists", family: "crm" },
  { method: "GET", path: "/v1/smart-lists/{id}", family: "crm", seed: seedSmartList, unknown: unknownSmartList },
  {
    method: "PATCH",
    path: "/v1/smart-lists/{id}",
    family: "crm",
    seed: seedSmartList,
    unknown: unknownSmartList,
    body: { name: "Renamed" },
  },
  { method: "DELETE", path: "/v1/smart-lists/{id}", family: "crm", seed: seedSmartList, unknown: unknownSmartList },
  {
    method: "GET",
    path: "/v1/smart-lists/{id}/contacts",
    family: "crm",
    seed: seedSmartList,
    unknown: unknownSmartList,
    objectReads: ["contacts:read"],
  },
);
// Tasks (issue 46 part 1).
const seedTask = async (owner: TestPrincipal) => {
  const res = await call("POST", "/v1/tasks", { token: owner.token, body: { title: "Matrix task", dueAt: "2030-01-01T09:00:00Z" } });
  if (res.status !== 201) throw new Error(`seeding a task failed: ${res.status} ${await res.text()}`);
  return { id: (await json(res)).data.id as string };
};
const unknownTask = { id: "00000000-0000-4000-8000-000000007a54" };
ROUTES.push(
  { method: "GET", path: "/v1/tasks", family: "crm" },
  { method: "POST", path: "/v1/tasks", family: "crm", body: { title: "Matrix task" } },
  { method: "GET", path: "/v1/tasks/{id}", family: "crm", seed: seedTask, unknown: unknownTask },
  { method: "PATCH", path: "/v1/tasks/{id}", family: "crm", body: { priority: "HIGH" }, seed: seedTask, unknown: unknownTask },
  { method: "DELETE", path: "/v1/tasks/{id}", family: "crm", seed: seedTask, unknown: unknownTask },
  { method: "POST", path: "/v1/tasks/{id}/complete", family: "crm", seed: seedTask, unknown: unknownTask },
);

// Appointments and calendar feeds (issue 46).
async function seedAppointment(owner: TestPrincipal): Promise<Record<string, string>> {
  const res = await call("POST", "/v1/appointments", { token: owner.token, body: MATRIX_APPOINTMENT });
  if (res.status !== 201) throw new Error(`seeding an appointment failed: ${res.status} ${await res.text()}`);
  return { id: (await json(res)).data.id };
}
export const MATRIX_APPOINTMENT = {
  type: "other",
  startsAt: "2030-05-01T14:00:00Z",
  endsAt: "2030-05-01T15:00:00Z",
  timeZone: "Europe/Paris",
  location: "Matrix office",
};
const unknownAppointment = { id: "00000000-0000-4000-8000-0000000a9901" };
ROUTES.push(
  { method: "GET", path: "/v1/appointments", family: "crm" },
  { method: "POST", path: "/v1/appointments", family: "crm", body: MATRIX_APPOINTMENT },
  { method: "GET", path: "/v1/appointments/{id}", family: "crm", seed: seedAppointment, unknown: unknownAppointment },
  {
    method: "PATCH",
    path: "/v1/appointments/{id}",
    family: "crm",
    body: { notes: "matrix" },
    seed: seedAppointment,
    unknown: unknownAppointment,
  },
  { method: "POST", path: "/v1/appointments/{id}/cancel", family: "crm", body: {}, seed: seedAppointment, unknown: unknownAppointment },
  { method: "GET", path: "/v1/users/me/calendar-feed", family: "crm" },
  // The feed it answers carries the user's tasks.
  { method: "POST", path: "/v1/users/me/calendar-feed", family: "crm", objectReads: ["tasks:read"] },
  { method: "DELETE", path: "/v1/users/me/calendar-feed", family: "crm" },
);

// Action plans (issue 46).
const PLAN_BODY = { name: "Matrix plan", steps: [{ type: "notify", delay: "P1D" }] };
async function seedPlan(owner: TestPrincipal): Promise<Record<string, string>> {
  const res = await call("POST", "/v1/action-plans", { token: owner.token, body: PLAN_BODY });
  if (res.status !== 201) throw new Error(`seeding an action plan failed: ${res.status} ${await res.text()}`);
  const { id: contact } = await seedContact(owner);
  return { id: ((await res.json()) as { data: { id: string } }).data.id, contact: contact! };
}
async function seedEnrollment(owner: TestPrincipal): Promise<Record<string, string>> {
  const { id, contact } = await seedPlan(owner);
  const res = await call("POST", `/v1/action-plans/${id}/enrollments`, { token: owner.token, body: { contactId: contact } });
  if (res.status !== 201) throw new Error(`seeding an enrollment failed: ${res.status} ${await res.text()}`);
  return { id: id!, enrollmentId: ((await res.json()) as { data: { id: string } }).data.id };
}
/** An enrollment paused, for the resume route to succeed on. */
async function seedPausedEnrollment(owner: TestPrincipal): Promise<Record<string, string>> {
  const params = await seedEnrollment(owner);
  const res = await call("POST", `/v1/action-plans/${params.id}/enrollments/${params.enrollmentId}/pause`, { token: owner.token });
  if (res.status !== 200) throw new Error(`pausing an enrollment failed: ${res.status} ${await res.text()}`);
  return params;
}
const unknownPlan = { id: "00000000-0000-4000-8000-0000000091a0" };
const unknownEnrollment = { ...unknownPlan, enrollmentId: "00000000-0000-4000-8000-0000000091a1" };
ROUTES.push(
  { method: "GET", path: "/v1/action-plans", family: "crm" },
  { method: "POST", path: "/v1/action-plans", family: "crm", body: PLAN_BODY },
  { method: "GET", path: "/v1/action-plans/{id}", family: "crm", seed: seedPlan, unknown: unknownPlan },
  { method: "PATCH", path: "/v1/action-plans/{id}", family: "crm", body: { name: "Renamed" }, seed: seedPlan, unknown: unknownPlan },
  { method: "DELETE", path: "/v1/action-plans/{id}", family: "crm", seed: seedPlan, unknown: unknownPlan },
  { method: "GET", path: "/v1/action-plans/{id}/enrollments", family: "crm", seed: seedPlan, unknown: unknownPlan },
  {
    method: "POST",
    path: "/v1/action-plans/{id}/enrollments",
    family: "crm",
    body: (p: Record<string, string>) => ({ contactId: p.contact ?? unknownContact.id }),
    seed: seedPlan,
    unknown: unknownPlan,
  },
  ...(["pause", "resume", "stop"] as const).map((move) => ({
    method: "POST" as const,
    path: `/v1/action-plans/{id}/enrollments/{enrollmentId}/${move}`,
    family: "crm" as const,
    seed: move === "resume" ? seedPausedEnrollment : seedEnrollment,
    unknown: unknownEnrollment,
  })),
);
