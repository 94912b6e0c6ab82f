// The MCP tools over properties, the reputation suite, the events log and the daily brief: each answers what its HTTP
// route answers for the same thing, needs the route's permission, refuses bad input with every issue, and keeps to
// the caller's organization. Every call goes through the official client, which checks the answer against the tool's
// outputSchema (test/helpers/mcp.ts).
import { describe, expect, it } from "vitest";
import { createApiKey } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createContact, logActivity, uniqueEmail } from "../helpers/contacts";
import { createDeal, createTask } from "../helpers/deals";
import { createDocument, leaseCanonical, sendForSignature, signAll, tokenOf } from "../helpers/documents";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import { connect, tool } from "../helpers/mcp";
import { createProperty, propertyBody, valuableProperty } from "../helpers/properties";
import { createSurveyTemplate } from "../helpers/surveys";
import { createTestimonial, move } from "../helpers/testimonials";

const issuesOf = (data: { issues?: { field: string; code: string }[] }) => (data.issues ?? []).map((i) => `${i.field} ${i.code}`).sort();
const ids = (list: { id: string }[]) => list.map((x) => x.id);
const httpJson = async (method: string, path: string, token: string, body?: unknown) => {
  const res = await call(method, path, { token, body });
  return { status: res.status, body: await json(res) };
};
/** An agent of `owner`'s organization, with a session of their own. */
const colleague = (owner: TestPrincipal) => createPrincipal({ organizationId: owner.organizationId, role: "agent" });
/** A contact that is a client, not a lead (a contact's type defaults to LEAD, which the brief would list). */
const clientContact = async (owner: TestPrincipal) => (await createContact(owner.token, { type: "CLIENT" })).id;
const utcDay = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
const calendar = (day: string) => ({ year: Number(day.slice(0, 4)), month: Number(day.slice(5, 7)), day: Number(day.slice(8, 10)) });

describe("MCP property tools", () => {
  it("creates, finds, reads, updates, values and analyses listings as the HTTP routes do", async () => {
    const { token } = await createPrincipal();
    const client = await connect(token);

    const created = await tool(client, "create_property", propertyBody({ mlsId: "MCP-1" }));
    expect(created.isError, created.text).toBe(false);
    const id = created.data.property.id;
    expect((await httpJson("GET", `/v1/properties/${id}`, token)).body.data).toEqual(created.data.property);

    await createProperty(token, {
      address: { street: "9 Lake Rd", city: "Orlando", state: "FL", zipCode: "32801" },
      listing: { listPrice: 300_000 },
    });
    await createProperty(token, { listing: { listPrice: 900_000 } });
    const found = await tool(client, "find_properties", { city: "miami beach", minListPrice: 500_000, maxListPrice: 700_000, limit: 10 });
    expect(found.isError, found.text).toBe(false);
    const http = (await httpJson("GET", "/v1/properties?city=miami%20beach&listPrice[gte]=500000&listPrice[lte]=700000&limit=10", token))
      .body;
    expect(found.data).toEqual({ properties: http.data, pagination: http.pagination });
    expect(ids(found.data.properties)).toEqual([id]);
    // The geo filters as the route spells them, and a sort.
    const near = await tool(client, "find_properties", {
      radius: { latitude: 25.7743, longitude: -80.1303, miles: 1.5 },
      sort: [{ field: "listPrice", direction: "desc" }],
    });
    const nearHttp = (await httpJson("GET", "/v1/properties?radius=25.7743,-80.1303,1.5&sort=listPrice:desc", token)).body;
    expect(ids(near.data.properties)).toEqual(ids(nearHttp.data));
    expect(near.data.pagination.total).toBe(2);
    const boxed = await tool(client, "find_properties", { bounds: { south: 25.7, west: -80.2, north: 25.8, east: -80.1 }, limit: 1 });
    const boxedHttp = (await httpJson("GET", "/v1/properties?bounds=25.7,-80.2,25.8,-80.1&limit=1", token)).body;
    expect(boxed.data).toEqual({ properties: boxedHttp.data, pagination: boxedHttp.pagination });
    expect(boxed.data.pagination).toMatchObject({ total: 2, hasMore: true });
    const words = await tool(client, "find_properties", { query: "ocean", include: ["analytics"] });
    expect(ids(words.data.properties).sort()).toEqual(ids(nearHttp.data).sort());

    const read = await tool(client, "get_property", { propertyId: id, include: ["analytics", "agent"] });
    expect(read.data.property).toEqual((await httpJson("GET", `/v1/properties/${id}?include=analytics,agent`, token)).body.data);

    const update = { propertyId: id, listing: { listPrice: 625_000 }, marketing: { description: "Ocean views" } };
    const updated = await tool(client, "update_property", update);
    expect(updated.isError, updated.text).toBe(false);
    expect(updated.data.property.listing.priceHistory.map((h: { event: string }) => h.event)).toEqual(["LISTED", "PRICE_REDUCTION"]);
    expect((await httpJson("GET", `/v1/properties/${id}`, token)).body.data).toEqual(updated.data.property);
    // Idempotent: the same values again change nothing, not even the version.
    const again = await tool(client, "update_property", update);
    expect(again.data.property).toEqual(updated.data.property);

    await call("POST", `/v1/properties/${id}/signals`, {
      token,
      body: { type: "VIEW", visitorId: "v1", referrer: "https://zillow.com/x" },
    });
    await call("POST", `/v1/properties/${id}/signals`, { token, body: { type: "INQUIRY" } });
    const analytics = await tool(client, "property_analytics", { propertyId: id, period: "7d" });
    expect(analytics.isError, analytics.text).toBe(false);
    expect(analytics.data.analytics).toMatchObject({ period: "7d", views: 1, uniqueViews: 1, inquiries: 1 });
    expect(analytics.data.analytics).toEqual((await httpJson("GET", `/v1/properties/${id}/analytics?period=7d`, token)).body.data);
    expect((await tool(client, "property_analytics", { propertyId: id })).data.analytics.period).toBe("30d");

    // Too few comparables: the route's 422, as a tool error; with three, the valuation the route then serves.
    expect(await tool(client, "property_valuation", { propertyId: id })).toMatchObject({
      isError: true,
      data: { error: "insufficient_comparables" },
    });
    const subject = await valuableProperty(token);
    const valued = await tool(client, "property_valuation", { propertyId: subject.id });
    expect(valued.isError, valued.text).toBe(false);
    expect(valued.data.valuation.comparables).toHaveLength(3);
    expect(valued.data.valuation).toEqual((await httpJson("GET", `/v1/properties/${subject.id}/valuation`, token)).body.data);
    expect((await httpJson("GET", `/v1/properties/${subject.id}`, token)).body.data.valuation.estimatedValue).toBe(
      valued.data.valuation.estimatedValue,
    );
    await client.close();
  });

  it("needs the routes' permissions, refuses bad input with every issue, and keeps to the organization", async () => {
    const owner = await createPrincipal();
    const property = await createProperty(owner.token);
    const reader = await connect((await createApiKey(owner.token, ["properties:read"])).key);
    for (const [name, args] of [
      ["create_property", propertyBody()],
      ["update_property", { propertyId: property.id, listing: { listPrice: 1 } }],
      ["property_valuation", { propertyId: property.id }],
    ] as const) {
      expect(await tool(reader, name, args), name).toMatchObject({
        isError: true,
        data: { error: "insufficient_permission", permission: "properties:write" },
      });
    }
    expect((await tool(reader, "get_property", { propertyId: property.id })).isError).toBe(false);
    const contactsOnly = await connect((await createApiKey(owner.token, ["contacts:read"])).key);
    for (const name of ["find_properties", "get_property", "property_analytics"])
      expect(await tool(contactsOnly, name, { propertyId: property.id }), name).toMatchObject({
        isError: true,
        data: { error: "insufficient_permission", permission: "properties:read" },
      });

    const client = await connect(owner.token);
    // The route's own query rules (a range, a box) and the create body's, every issue at once.
    expect(issuesOf((await tool(client, "find_properties", { minListPrice: 9, maxListPrice: 1 })).data)).toEqual([
      "listPrice[gte] invalid_range",
    ]);
    expect(issuesOf((await tool(client, "find_properties", { bounds: { south: 30, west: -82, north: 29, east: -81 } })).data)).toEqual([
      "bounds invalid_geo",
    ]);
    const bad = await tool(client, "create_property", { address: { street: "1 A St" }, details: {}, listing: { listPrice: -1 } });
    expect(bad).toMatchObject({ isError: true, data: { error: "validation_error" } });
    expect(issuesOf(bad.data)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^address\.city /),
        expect.stringMatching(/^details\.propertyType /),
        expect.stringMatching(/^listing\.listPrice /),
      ]),
    );
    // Photos are not the update tool's: replacing the list would delete uploads for good.
    expect(
      issuesOf((await tool(client, "update_property", { propertyId: property.id, media: { photos: [] } })).data).some((i) =>
        i.startsWith("media"),
      ),
    ).toBe(true);
    expect(issuesOf((await tool(client, "property_analytics", { propertyId: property.id, period: "1y" })).data)).toEqual([
      "period invalid_enum_value",
    ]);

    const stranger = await connect((await createPrincipal()).token);
    for (const [name, args] of [
      ["get_property", { propertyId: property.id }],
      ["update_property", { propertyId: property.id, listing: { listPrice: 1 } }],
      ["property_valuation", { propertyId: property.id }],
      ["property_analytics", { propertyId: property.id }],
    ] as const)
      expect(await tool(stranger, name, args), name).toMatchObject({ isError: true, data: { error: "not_found" } });
    expect((await tool(stranger, "find_properties")).data.properties).toEqual([]);
    expect((await httpJson("GET", `/v1/properties/${property.id}`, owner.token)).body.data.listing.listPrice).toBe(
      property.listing.listPrice,
    );
    for (const c of [reader, contactsOnly, client, stranger]) await c.close();
  });
});

describe("MCP reputation tools", () => {
  it("lists, approves and publishes testimonials and sums up the reputation as the HTTP routes do", async () => {
    const owner = await createPrincipal();
    const client = await connect(owner.token);
    const first = await createTestimonial(owner, { rating: 4, category: "SELLER" });
    const second = await createTestimonial(owner, { rating: 5 });

    const pending = await tool(client, "list_testimonials", { status: "PENDING", limit: 1 });
    expect(pending.isError, pending.text).toBe(false);
    expect(pending.data).toEqual((await httpJson("GET", "/api/reputation/testimonials?status=PENDING&limit=1", owner.token)).body);
    expect(pending.data.pagination.hasMore).toBe(true);
    const sellers = await tool(client, "list_testimonials", { category: "SELLER", agentUserId: owner.userId });
    expect(ids(sellers.data.testimonials)).toEqual([first.id]);

    expect(await tool(client, "publish_testimonial", { testimonialId: first.id })).toMatchObject({
      isError: true,
      data: { error: "not_approved" },
    });
    const approved = await tool(client, "approve_testimonial", { testimonialId: first.id });
    expect(approved.isError, approved.text).toBe(false);
    expect(approved.data.testimonial).toMatchObject({ status: "APPROVED", approvedByUserId: owner.userId });
    const { syndications: _s, ...read } = (await httpJson("GET", `/api/reputation/testimonials/${first.id}`, owner.token)).body;
    expect(approved.data.testimonial).toEqual(read);
    expect(await tool(client, "approve_testimonial", { testimonialId: first.id })).toMatchObject({
      isError: true,
      data: { error: "invalid_state" },
    });
    const published = await tool(client, "publish_testimonial", { testimonialId: first.id });
    expect(published.data.testimonial).toMatchObject({ status: "PUBLISHED", visibility: "PUBLIC" });
    await move(owner, second.id, "approve");
    await move(owner, second.id, "publish");

    const agent = await tool(client, "reputation_summary", { agentUserId: owner.userId });
    expect(agent.data.summary).toMatchObject({ scope: "AGENT", totalReviews: 2, averageRating: 4.5 });
    expect(agent.data.summary).toEqual((await httpJson("GET", `/api/reputation/aggregate?agentUserId=${owner.userId}`, owner.token)).body);
    const org = await tool(client, "reputation_summary");
    expect(org.data.summary).toEqual((await httpJson("GET", "/api/reputation/aggregate", owner.token)).body);
    expect(org.data.summary.scope).toBe("ORG");

    // An agent moderates only the testimonials about themselves, as on the routes.
    const peer = await colleague(owner);
    const peerClient = await connect(peer.token);
    const theirs = await createTestimonial(owner);
    expect(await tool(peerClient, "approve_testimonial", { testimonialId: theirs.id })).toMatchObject({
      isError: true,
      data: { error: "insufficient_role" },
    });
    expect((await call("POST", `/api/reputation/testimonials/${theirs.id}/approve`, { token: peer.token })).status).toBe(403);
    const own = await createTestimonial(peer);
    expect((await tool(peerClient, "approve_testimonial", { testimonialId: own.id })).data.testimonial.status).toBe("APPROVED");
    await client.close();
    await peerClient.close();
  });

  it("sends surveys by e-mail or as a link, and logs and lists referrals, as the HTTP routes do", async () => {
    const owner = await createPrincipal();
    const client = await connect(owner.token);
    await createSurveyTemplate(owner, { sendDelayHours: 24 });
    const contact = await createContact(owner.token);
    const deal = await createDeal(owner.token, { contactId: contact.id });

    const mailed = await tool(client, "send_survey", { recipientPersonId: contact.id, dealId: deal.id });
    expect(mailed.isError, mailed.text).toBe(false);
    expect(mailed.data.survey).toMatchObject({ channel: "EMAIL", status: "SCHEDULED", agentUserId: owner.userId, dealId: deal.id });
    // The client's capability goes to the client by mail, never into the agent's context.
    expect(mailed.data.survey.surveyUrl).toBeUndefined();
    expect(mailed.text).not.toMatch(/survey\/|accessToken/);
    const { response: _r, ...detail } = (await httpJson("GET", `/api/reputation/surveys/${mailed.data.survey.id}`, owner.token)).body;
    expect(mailed.data.survey).toEqual(detail);
    const linked = await tool(client, "send_survey", { recipientPersonId: contact.id, channel: "LINK" });
    expect(linked.data.survey.surveyUrl).toMatch(/\/survey\/\S+$/);
    expect((await call("GET", `/api/public/survey/${linked.data.survey.surveyUrl.split("/survey/")[1]}`, {})).status).toBe(200);

    const referrer = await createContact(owner.token);
    const referred = uniqueEmail("referred");
    const logged = await tool(client, "create_referral", {
      referrerPersonId: referrer.id,
      referredName: "Rita Referred",
      referredContact: referred,
      rewardType: "GIFT_CARD",
    });
    expect(logged.isError, logged.text).toBe(false);
    expect(logged.data.referral).toMatchObject({ agentUserId: owner.userId, status: "RECEIVED", rewardStatus: "PENDING" });
    const listed = await tool(client, "list_referrals", { agentUserId: owner.userId });
    expect(listed.data).toEqual((await httpJson("GET", `/api/reputation/referrals?agentUserId=${owner.userId}`, owner.token)).body);
    expect(ids(listed.data.referrals)).toEqual([logged.data.referral.id]);

    // The routes' rules, every issue at once: a reward status without its type, references of nothing.
    expect(issuesOf((await tool(client, "create_referral", { referredName: "X", rewardStatus: "PAID", rewardValue: 5 })).data)).toEqual([
      "rewardStatus requires_reward_type",
      "rewardValue requires_reward_type",
    ]);
    expect(
      issuesOf((await tool(client, "send_survey", { recipientPersonId: "00000000-0000-4000-8000-000000000000", channel: "SMS" })).data),
    ).toEqual(["channel invalid_enum_value"]);
    expect(issuesOf((await tool(client, "send_survey", { recipientPersonId: "00000000-0000-4000-8000-000000000000" })).data)).toEqual([
      "recipientPersonId invalid_reference",
    ]);
    // An agent sends surveys only about themselves.
    const peer = await connect((await colleague(owner)).token);
    expect(await tool(peer, "send_survey", { recipientPersonId: contact.id, agentUserId: owner.userId })).toMatchObject({
      isError: true,
      data: { error: "insufficient_role" },
    });
    await client.close();
    await peer.close();
  });

  it("needs the routes' permissions and keeps to the organization", async () => {
    const owner = await createPrincipal();
    const testimonial = await createTestimonial(owner);
    const contact = await createContact(owner.token);
    await createSurveyTemplate(owner);
    const reader = await connect((await createApiKey(owner.token, ["reputation:read"])).key);
    for (const [name, args] of [
      ["approve_testimonial", { testimonialId: testimonial.id }],
      ["publish_testimonial", { testimonialId: testimonial.id }],
      ["send_survey", { recipientPersonId: contact.id, channel: "LINK" }],
      ["create_referral", { referredName: "Nope" }],
    ] as const)
      expect(await tool(reader, name, args), name).toMatchObject({
        isError: true,
        data: { error: "insufficient_permission", permission: "reputation:write" },
      });
    expect((await tool(reader, "list_testimonials")).data.testimonials).toHaveLength(1);
    const contactsOnly = await connect((await createApiKey(owner.token, ["contacts:read"])).key);
    for (const name of ["list_testimonials", "list_referrals", "reputation_summary"])
      expect(await tool(contactsOnly, name), name).toMatchObject({ isError: true, data: { error: "insufficient_permission" } });

    const stranger = await createPrincipal();
    const other = await connect(stranger.token);
    for (const name of ["approve_testimonial", "publish_testimonial"])
      expect(await tool(other, name, { testimonialId: testimonial.id }), name).toMatchObject({
        isError: true,
        data: { error: "not_found" },
      });
    expect((await tool(other, "list_testimonials")).data.testimonials).toEqual([]);
    expect(await tool(other, "reputation_summary", { agentUserId: owner.userId })).toMatchObject({
      isError: true,
      data: { error: "not_found" },
    });
    // Another organization's contact and agent are references of nothing, as on the routes (400).
    await createSurveyTemplate(stranger);
    expect(issuesOf((await tool(other, "send_survey", { recipientPersonId: contact.id, channel: "LINK" })).data)).toEqual([
      "recipientPersonId invalid_reference",
    ]);
    expect((await tool(other, "create_referral", { referredName: "X", agentUserId: owner.userId })).data).toMatchObject({
      error: "validation_error",
    });
    expect((await tool(other, "list_referrals")).data.referrals).toEqual([]);
    expect((await httpJson("GET", `/api/reputation/testimonials/${testimonial.id}`, owner.token)).body.status).toBe("PENDING");
    for (const c of [reader, contactsOnly, other]) await c.close();
  });
});

describe("MCP recent changes", () => {
  it("pages the organization's event log as GET /v1/events does, with the route's permissions per event", async () => {
    const owner = await createPrincipal();
    const contact = await createContact(owner.token);
    const deal = await createDeal(owner.token, { contactId: contact.id });
    const client = await connect(owner.token);

    const page = await tool(client, "recent_changes", { limit: 1 });
    expect(page.isError, page.text).toBe(false);
    const http = (await httpJson("GET", "/v1/events?limit=1", owner.token)).body;
    expect(page.data).toEqual({ events: http.data, pagination: http.pagination });
    expect(page.data.events[0]).toMatchObject({ event: "deal.created", data: { object: { id: deal.id } } });
    expect(page.data.pagination).toMatchObject({ hasMore: true, total: 2 });
    const next = await tool(client, "recent_changes", { limit: 1, cursor: page.data.pagination.nextCursor });
    expect(next.data.events.map((e: { event: string }) => e.event)).toEqual(["contact.created"]);
    const typed = await tool(client, "recent_changes", { type: "contact.created" });
    expect(typed.data.events.map((e: { data: { object: { id: string } } }) => e.data.object.id)).toEqual([contact.id]);

    // The log shows a token only the events whose objects it may read; naming another type needs its permission.
    const events = await connect((await createApiKey(owner.token, ["events:read", "deals:read"])).key);
    const dealsOnly = await tool(events, "recent_changes");
    expect(dealsOnly.data.events.map((e: { event: string }) => e.event)).toEqual(["deal.created"]);
    expect(await tool(events, "recent_changes", { type: "contact.created" })).toMatchObject({
      isError: true,
      data: { error: "insufficient_permission" },
    });
    const noLog = await connect((await createApiKey(owner.token, ["contacts:read"])).key);
    expect(await tool(noLog, "recent_changes")).toMatchObject({
      isError: true,
      data: { error: "insufficient_permission", permission: "events:read" },
    });

    expect(issuesOf((await tool(client, "recent_changes", { type: "contact.exploded", limit: 51 })).data)).toEqual([
      "limit too_big",
      "type invalid_enum_value",
    ]);
    expect(issuesOf((await tool(client, "recent_changes", { cursor: "not-ours" })).data)).toEqual(["cursor invalid_cursor"]);
    const stranger = await connect((await createPrincipal()).token);
    expect((await tool(stranger, "recent_changes")).data).toMatchObject({ events: [], pagination: { total: 0 } });
    for (const c of [client, events, noLog, stranger]) await c.close();
  });
});

describe("MCP daily brief", () => {
  /** A lease whose deposit falls due in 3 days, whose renewal notice was due 30 days ago and whose term ends in 30. */
  const dueLease = () => {
    const canonical = leaseCanonical();
    canonical.lease.term = { commencement: calendar(utcDay(-300)), end: calendar(utcDay(30)) };
    (canonical.lease.deposit as Record<string, unknown>).dueDate = calendar(utcDay(3));
    return canonical;
  };

  it("gathers the user's new leads and due tasks, and the organization's due obligations and waiting envelopes, capped with totals", async () => {
    const me = await createPrincipal();
    const peer = await colleague(me);
    // Leads: mine and nobody's count; a colleague's, a contacted one, a disqualified one and a client do not.
    const mine = [];
    for (let i = 0; i < 11; i++) mine.push(await createContact(me.token, { type: "LEAD", assignedTo: me.userId, lastName: `Lead${i}` }));
    const nobodys = await createContact(me.token, { type: "LEAD", lastName: "Unassigned" });
    const theirs = await createContact(me.token, { type: "LEAD", assignedTo: peer.userId });
    const contacted = await createContact(me.token, { type: "LEAD", assignedTo: me.userId });
    await logActivity(me.token, contacted.id, { type: "PHONE_CALL", description: "Called" });
    await createContact(me.token, { type: "LEAD", assignedTo: me.userId, status: "DISQUALIFIED" });
    await createContact(me.token, { type: "CLIENT", assignedTo: me.userId });

    // Tasks: mine due today or before, and nobody's on my deal; not tomorrow's, undated, done, or a colleague's.
    const myDeal = await createDeal(me.token, { assignedTo: me.userId, title: "My deal", contactId: await clientContact(me) });
    const peerDeal = await createDeal(me.token, { assignedTo: peer.userId, title: "Their deal", contactId: await clientContact(me) });
    const overdue = await createTask(me.token, myDeal.id, { title: "Overdue", dueDate: utcDay(-2), assignedTo: me.userId });
    const today = await createTask(me.token, myDeal.id, { title: "Today", dueDate: `${utcDay(0)}T00:00:00Z`, assignedTo: me.userId });
    const unassigned = await createTask(me.token, myDeal.id, { title: "Nobody's", dueDate: utcDay(0) });
    const onTheirDeal = await createTask(me.token, peerDeal.id, { title: "Mine on theirs", dueDate: utcDay(-1), assignedTo: me.userId });
    await createTask(me.token, myDeal.id, { title: "Tomorrow", dueDate: utcDay(1), assignedTo: me.userId });
    await createTask(me.token, myDeal.id, { title: "Undated", assignedTo: me.userId });
    await createTask(me.token, myDeal.id, { title: "Theirs", dueDate: utcDay(-1), assignedTo: peer.userId });
    await createTask(me.token, peerDeal.id, { title: "Nobody's on theirs", dueDate: utcDay(-1) });
    const done = await createTask(me.token, myDeal.id, { title: "Done", dueDate: utcDay(-1), assignedTo: me.userId });
    expect((await call("POST", `/v1/deals/${myDeal.id}/tasks/${done.id}/complete`, { token: me.token })).status).toBe(200);

    // Obligations: the deposit (due soon) and the renewal notice (overdue); not the expiry, a month out.
    const lease = await createDocument(me.token, dueLease());
    // Envelopes: one waiting on its first signer (sequential), one completed.
    const waiting = await createDocument(me.token);
    await sendForSignature(me.token, waiting.id, {
      mode: "sequential",
      signers: [
        { name: "First Signer", email: "first@signer.test", role: "landlord" },
        { name: "Second Signer", email: "second@signer.test", role: "tenant" },
      ],
    });
    const finished = await createDocument(me.token);
    const sent = await sendForSignature(me.token, finished.id, { signers: [{ name: "Solo", email: "solo@signer.test", role: "tenant" }] });
    await signAll(tokenOf(sent.links[0]!.url));

    const client = await connect(me.token);
    const brief = await tool(client, "daily_brief");
    expect(brief.isError, brief.text).toBe(false);
    expect(brief.data.date).toBe(utcDay(0));
    expect(brief.data.omitted).toEqual([]);
    expect(brief.data.newLeads.total).toBe(12);
    expect(brief.data.newLeads.items).toHaveLength(10);
    // Newest first: the unassigned lead was made last.
    expect(brief.data.newLeads.items[0]).toMatchObject({ id: nobodys.id, assignedTo: null });
    expect(ids(brief.data.newLeads.items)).toEqual([nobodys, ...mine.slice(2).reverse()].map((c) => c.id));
    expect(ids(brief.data.newLeads.items)).not.toContain(theirs.id);

    expect(brief.data.tasksDue.total).toBe(4);
    expect(brief.data.tasksDue.items.map((t: { id: string; overdue: boolean }) => [t.id, t.overdue])).toEqual([
      [overdue.id, true],
      [onTheirDeal.id, true],
      // A date sorts before a timestamp of the same day; a date is due all day, a timestamp from its time on.
      [unassigned.id, false],
      [today.id, true],
    ]);
    expect(brief.data.tasksDue.items[0]).toMatchObject({ dealId: myDeal.id, dealTitle: "My deal", title: "Overdue", priority: "MEDIUM" });

    // The obligations are the list route's, within its 7 days.
    const obligations = (await httpJson("GET", "/api/documents/obligations?withinDays=7", me.token)).body.obligations;
    expect(brief.data.obligationsDueSoon).toEqual({ total: 2, items: obligations });
    expect(obligations.map((o: { documentId: string; type: string; urgency: string }) => [o.documentId, o.type, o.urgency])).toEqual([
      [lease.id, "renewal", "overdue"],
      [lease.id, "deposit_due", "due_soon"],
    ]);

    expect(brief.data.envelopesWaiting.total).toBe(1);
    expect(brief.data.envelopesWaiting.items[0]).toMatchObject({
      documentId: waiting.id,
      mode: "sequential",
      sentBy: me.userId,
      signed: 0,
      signers: 2,
      waitingOn: [{ name: "First Signer", email: "first@signer.test", role: "landlord", status: "sent" }],
    });

    // Capped by the limit asked for; the totals stay.
    const short = await tool(client, "daily_brief", { limit: 1 });
    expect(short.data.newLeads).toMatchObject({ total: 12, items: [{ id: nobodys.id }] });
    expect(short.data.tasksDue.items).toHaveLength(1);
    expect(short.data.obligationsDueSoon.items).toHaveLength(1);

    // The colleague's brief: their lead, the nobody's lead, their task and nobody's task on their deal.
    const peerBrief = await tool(await connect(peer.token), "daily_brief");
    expect(ids(peerBrief.data.newLeads.items)).toEqual([theirs.id, nobodys.id]);
    expect(peerBrief.data.tasksDue.items.map((t: { title: string }) => t.title).sort()).toEqual(["Nobody's on theirs", "Theirs"]);
    await client.close();
  });

  it("leaves out what the token may not read, naming it; needs contacts:read; refuses bad input; keeps to the organization", async () => {
    const me = await createPrincipal();
    const deal = await createDeal(me.token, { assignedTo: me.userId, contactId: await clientContact(me) });
    await createTask(me.token, deal.id, { dueDate: utcDay(0), assignedTo: me.userId });
    const lead = await createContact(me.token, { type: "LEAD", assignedTo: me.userId });

    const narrow = await connect((await createApiKey(me.token, ["contacts:read"])).key);
    const brief = await tool(narrow, "daily_brief");
    expect(brief.isError, brief.text).toBe(false);
    expect(brief.data).toEqual({
      date: utcDay(0),
      newLeads: { total: 1, items: [expect.objectContaining({ id: lead.id })] },
      omitted: [
        { section: "tasksDue", permission: "tasks:read" },
        { section: "obligationsDueSoon", permission: "documents:read" },
        { section: "envelopesWaiting", permission: "signatures:read" },
        { section: "appointmentsToday", permission: "appointments:read" },
      ],
    });
    const wider = await connect((await createApiKey(me.token, ["contacts:read", "tasks:read"])).key);
    const withTasks = await tool(wider, "daily_brief");
    expect(withTasks.data.tasksDue.total).toBe(1);
    expect(withTasks.data.omitted.map((o: { section: string }) => o.section)).toEqual([
      "obligationsDueSoon",
      "envelopesWaiting",
      "appointmentsToday",
    ]);

    const dealsOnly = await connect((await createApiKey(me.token, ["deals:read"])).key);
    expect(await tool(dealsOnly, "daily_brief")).toMatchObject({
      isError: true,
      data: { error: "insufficient_permission", permission: "contacts:read" },
    });
    const client = await connect(me.token);
    expect(issuesOf((await tool(client, "daily_brief", { limit: 0 })).data)).toEqual(["limit too_small"]);
    expect(issuesOf((await tool(client, "daily_brief", { limit: 26, extra: true })).data)).toEqual([
      "extra unknown_field",
      "limit too_big",
    ]);

    // Another organization's leads, tasks, obligations and envelopes are not in a stranger's brief.
    await createDocument(me.token, dueLease());
    const stranger = await connect((await createPrincipal()).token);
    const theirs = await tool(stranger, "daily_brief");
    for (const section of ["newLeads", "tasksDue", "obligationsDueSoon", "envelopesWaiting", "appointmentsToday"])
      expect(theirs.data[section], section).toEqual({ total: 0, items: [] });
    for (const c of [narrow, wider, dealsOnly, client, stranger]) await c.close();
  });
});

describe("MCP tool list", () => {
  it("stays under 128 tools, each named verb first in snake_case", async () => {
    const client = await connect((await createPrincipal()).token);
    const { tools } = await client.listTools();
    expect(tools.length).toBeLessThan(128);
    for (const name of [
      "find_properties",
      "get_property",
      "create_property",
      "update_property",
      "property_valuation",
      "property_analytics",
      "list_testimonials",
      "approve_testimonial",
      "publish_testimonial",
      "send_survey",
      "list_referrals",
      "create_referral",
      "reputation_summary",
      "recent_changes",
      "daily_brief",
    ])
      expect(tools.map((t) => t.name)).toContain(name);
    for (const t of tools) expect(t.name).toMatch(/^[a-z]+(_[a-z]+)*$/);
    const annotations = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    expect(annotations.send_survey).toMatchObject({ destructiveHint: true, openWorldHint: true, idempotentHint: false });
    expect(annotations.publish_testimonial).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true });
    expect(annotations.update_property).toMatchObject({ destructiveHint: false, idempotentHint: true });
    expect(annotations.create_referral).toMatchObject({ destructiveHint: false, idempotentHint: false, openWorldHint: false });
    expect(annotations.daily_brief).toMatchObject({ readOnlyHint: true });
    await client.close();
  });
});
