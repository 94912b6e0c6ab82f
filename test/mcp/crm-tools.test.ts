// The CRM's MCP tools (contacts, leads, deals and their tasks, users, custom fields): each answers what its HTTP
// route answers for the same thing, refuses a credential without the route's permission, answers bad arguments as a
// tool error with every issue, and keeps to the caller's organization. The official client checks every answer
// against the tool's outputSchema (helpers/mcp.ts).
import { env } from "cloudflare:workers";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describe, expect, it } from "vitest";
import { queryPlan } from "../helpers/query-plan";
import { createDb } from "../../src/db/client";
import { dueBefore, dueTaskStatements } from "../../src/deals/due-tasks";
import { encodeCursor } from "../../src/lib/cursor";
import { MCP_TOOLS } from "../../src/mcp/server";
import { DEFAULT_PERMISSIONS } from "../../src/platform/permissions";
import { createApiKey } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createContact, getContact, uniqueEmail } from "../helpers/contacts";
import { addAgent, createDeal, createTask, getDeal } from "../helpers/deals";
import { createPrincipal } from "../helpers/factories";
import { connect, tool } from "../helpers/mcp";
import { createProperty } from "../helpers/properties";
import { outboxEvents } from "../helpers/surveys";

const CRM_TOOLS = {
  get_contact: "contacts:read",
  update_contact: "contacts:write",
  tag_contact: "contacts:write",
  find_duplicates: "contacts:read",
  submit_lead: "leads:write",
  get_deal: "deals:read",
  create_deal: "deals:write",
  update_deal: "deals:write",
  add_deal_task: "deals:write",
  complete_deal_task: "deals:write",
  my_tasks: "deals:read",
  list_users: "organization:read",
  list_custom_fields: "custom-fields:read",
} as const;
type CrmTool = keyof typeof CRM_TOOLS;

/** A tool error's issues as "field code", sorted. */
const issuesOf = (r: Awaited<ReturnType<typeof tool>>) => {
  expect(r.isError, r.text).toBe(true);
  expect(r.data.error).toBe("validation_error");
  return (r.data.issues as { field: string; code: string }[]).map((i) => `${i.field} ${i.code}`).sort();
};
const ok = async (client: Client, name: CrmTool, args: Record<string, unknown> = {}) => {
  const r = await tool(client, name, args);
  expect(r.isError, `${name}: ${r.text}`).toBe(false);
  return r.data;
};
const notFound = async (client: Client, name: CrmTool, args: Record<string, unknown>) =>
  expect(await tool(client, name, args), name).toMatchObject({ isError: true, data: { error: "not_found" } });
const data = async (path: string, token: string) => {
  const res = await call("GET", path, { token });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
};
const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

describe("MCP CRM tools: the list", () => {
  it("lists every CRM tool with its permission, true annotations and an object outputSchema; fewer than 128 tools in all", async () => {
    const client = await connect((await createPrincipal()).token);
    const { tools } = await client.listTools();
    expect(tools.length).toBeLessThan(128);
    expect(tools.length).toBe(MCP_TOOLS.length);
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const [name, permission] of Object.entries(CRM_TOOLS)) {
      const t = byName.get(name);
      expect(t, name).toBeDefined();
      expect(name).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(t!.description, name).toContain(`Needs the \`${permission}\` permission.`);
      expect(t!.outputSchema?.type, name).toBe("object");
      expect(t!.title, name).toEqual(expect.any(String));
    }
    const hints = (name: string) => {
      const a = byName.get(name)!.annotations!;
      return [a.readOnlyHint, a.destructiveHint, a.idempotentHint, a.openWorldHint];
    };
    for (const read of ["get_contact", "find_duplicates", "get_deal", "my_tasks", "list_users", "list_custom_fields"])
      expect(hints(read), read).toEqual([true, false, true, false]);
    // Set-to-value writes (and a set union, and a completion) are idempotent; creations are not.
    for (const set of ["update_contact", "tag_contact", "complete_deal_task"]) expect(hints(set), set).toEqual([false, false, true, false]);
    for (const add of ["submit_lead", "create_deal", "add_deal_task"]) expect(hints(add), add).toEqual([false, false, false, false]);
    // Closing a deal schedules a survey mailed to the client.
    expect(hints("update_deal")).toEqual([false, false, true, true]);
    expect(hints("move_deal")).toEqual([false, false, false, true]);
    await client.close();
  });

  it("refuses every CRM tool to an API key without its permission, naming it, and runs nothing", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, { status: "ACTIVE" });
    const deal = await createDeal(p.token, { contactId: contact.id });
    const task = await createTask(p.token, deal.id, { assignedTo: p.userId, dueDate: day(-1) });
    // Valid arguments: a refusal comes from the permission, before anything runs.
    const args: Record<CrmTool, Record<string, unknown>> = {
      get_contact: { contactId: contact.id },
      update_contact: { contactId: contact.id, status: "INACTIVE" },
      tag_contact: { contactId: contact.id, tags: ["refused"] },
      find_duplicates: {},
      submit_lead: { source: "WEBSITE", person: { emails: [uniqueEmail("refused")] } },
      get_deal: { dealId: deal.id },
      create_deal: { title: "Refused", type: "SALE", amount: 1, contactId: contact.id },
      update_deal: { dealId: deal.id, amount: 1 },
      add_deal_task: { dealId: deal.id, title: "Refused" },
      complete_deal_task: { dealId: deal.id, taskId: task.id },
      my_tasks: {},
      list_users: {},
      list_custom_fields: {},
    };
    const permissions = [...new Set(Object.values(CRM_TOOLS))];
    for (const lacking of permissions) {
      const key = await createApiKey(
        p.token,
        DEFAULT_PERMISSIONS.filter((q) => q !== lacking),
      );
      const client = await connect(key.key);
      for (const [name, needs] of Object.entries(CRM_TOOLS) as [CrmTool, string][]) {
        if (needs !== lacking) continue;
        const refused = await tool(client, name, args[name]);
        expect(refused, name).toMatchObject({ isError: true, data: { error: "insufficient_permission", permission: lacking } });
      }
      await client.close();
    }
    // Nothing was written by any of them.
    expect(await getContact(p.token, contact.id)).toEqual(contact);
    expect(await getDeal(p.token, deal.id)).toMatchObject({ amount: deal.amount, updatedAt: deal.updatedAt });
    expect((await data(`/v1/deals/${deal.id}/tasks`, p.token)).data).toEqual([task]);
    expect((await data("/v1/contacts", p.token)).pagination.total).toBe(1);
  });
});

describe("MCP CRM tools: contacts", () => {
  it("get_contact answers GET /v1/contacts/{id} with its activities, communications and deals; another organization's id is not found", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, { tags: ["buyer"] });
    await call("POST", `/v1/contacts/${contact.id}/activities`, { token: p.token, body: { type: "NOTE", description: "Met" } });
    await call("POST", `/v1/contacts/${contact.id}/communications`, {
      token: p.token,
      body: { type: "call", direction: "outbound", durationSeconds: 30 },
    });
    await createDeal(p.token, { contactId: contact.id });
    const client = await connect(p.token);

    const plain = await ok(client, "get_contact", { contactId: contact.id });
    expect(plain.contact).toEqual((await data(`/v1/contacts/${contact.id}`, p.token)).data);
    const whole = await ok(client, "get_contact", { contactId: contact.id, include: ["activities", "communications", "deals"] });
    const http = (await data(`/v1/contacts/${contact.id}?include=activities,communications,deals`, p.token)).data;
    expect(whole.contact).toEqual(http);
    expect(whole.contact.activities).toHaveLength(1);
    expect(whole.contact.communications).toHaveLength(1);
    expect(whole.contact.deals).toHaveLength(1);

    expect(issuesOf(await tool(client, "get_contact", { contactId: "", include: ["notes"] }))).toEqual([
      "contactId too_small",
      "include.0 invalid_enum_value",
    ]);
    // Embedding deals needs deals:read, as the route's include does.
    const contactsOnly = await connect((await createApiKey(p.token, ["contacts:read"])).key);
    const embed = await tool(contactsOnly, "get_contact", { contactId: contact.id, include: ["deals"] });
    expect(embed).toMatchObject({ isError: true, data: { error: "insufficient_permission" } });
    expect(embed.text).toContain("deals:read");
    expect(embed.text).not.toContain(contact.email);

    const stranger = await connect((await createPrincipal()).token);
    await notFound(stranger, "get_contact", { contactId: contact.id });
    await Promise.all([client.close(), contactsOnly.close(), stranger.close()]);
  });

  it("update_contact sets status, agent and more as PUT does, emitting contact.updated and contact.assigned; bad input and other organizations refused", async () => {
    const p = await createPrincipal();
    const agent = await addAgent(p.organizationId, "Ann Agent");
    const contact = await createContact(p.token, { notes: "keep me" });
    const client = await connect(p.token);

    const updated = await ok(client, "update_contact", { contactId: contact.id, status: "INACTIVE", assignedTo: agent, phone: null });
    expect(updated.contact).toMatchObject({ id: contact.id, status: "INACTIVE", assignedTo: agent, notes: "keep me", phone: null });
    expect(updated.contact).toEqual(await getContact(p.token, contact.id));
    const [event] = await outboxEvents(p.organizationId, "contact.updated");
    expect(event).toMatchObject({ actor: { type: "user", userId: p.userId }, data: { object: updated.contact } });
    expect(event!.data.changes).toEqual(expect.arrayContaining(["status", "assignedTo"]));
    expect(await outboxEvents(p.organizationId, "contact.assigned")).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ previousAttributes: { assignedTo: null } }) }),
    ]);
    // The same set again changes nothing and emits nothing.
    expect((await ok(client, "update_contact", { contactId: contact.id, status: "INACTIVE" })).contact).toEqual(updated.contact);
    expect(await outboxEvents(p.organizationId, "contact.updated")).toHaveLength(1);

    // The route's schema, every issue at once; the read-only fields PUT tolerates are no input here.
    expect(
      issuesOf(await tool(client, "update_contact", { contactId: contact.id, status: "GONE", email: "nope", createdAt: "x" })),
    ).toEqual(["createdAt unknown_field", "email invalid_email", "status invalid_enum_value"]);
    // The service's checks: an assignee of another organization.
    const stranger = await createPrincipal();
    expect(issuesOf(await tool(client, "update_contact", { contactId: contact.id, assignedTo: stranger.userId }))).toEqual([
      "assignedTo invalid_reference",
    ]);
    const other = await createContact(p.token);
    expect(await tool(client, "update_contact", { contactId: contact.id, email: other.email })).toMatchObject({
      isError: true,
      data: { error: "duplicate_email" },
    });

    const theirs = await connect(stranger.token);
    await notFound(theirs, "update_contact", { contactId: contact.id, status: "ACTIVE" });
    expect((await getContact(p.token, contact.id)).status).toBe("INACTIVE");
    await Promise.all([client.close(), theirs.close()]);
  });

  it("tag_contact adds tags as POST …/tags does, emitting contact.tagged with the new ones only", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, { tags: ["buyer"] });
    const client = await connect(p.token);

    const tagged = await ok(client, "tag_contact", { contactId: contact.id, tags: ["vip", "buyer"] });
    expect(tagged.contact.tags).toEqual(["buyer", "vip"]);
    expect(tagged.contact).toEqual(await getContact(p.token, contact.id));
    const events = await outboxEvents(p.organizationId, "contact.tagged");
    expect(events.at(-1)).toMatchObject({ data: { tags: ["vip"], object: tagged.contact } });
    // Tags it carries: nothing changes, nothing is emitted.
    expect((await ok(client, "tag_contact", { contactId: contact.id, tags: ["vip"] })).contact).toEqual(tagged.contact);
    expect(await outboxEvents(p.organizationId, "contact.tagged")).toHaveLength(events.length);

    expect(issuesOf(await tool(client, "tag_contact", { contactId: contact.id, tags: ["a,b", ""] }))).toEqual([
      "tags.0 invalid_character",
      "tags.1 invalid_character",
      "tags.1 too_small",
    ]);
    expect(issuesOf(await tool(client, "tag_contact", { contactId: contact.id, tags: [] }))).toEqual(["tags too_small"]);
    const stranger = await connect((await createPrincipal()).token);
    await notFound(stranger, "tag_contact", { contactId: contact.id, tags: ["mine"] });
    expect((await getContact(p.token, contact.id)).tags).toEqual(["buyer", "vip"]);
    await Promise.all([client.close(), stranger.close()]);
  });

  it("find_duplicates answers GET /v1/contacts/duplicates, page by page, and sees only the caller's organization", async () => {
    const p = await createPrincipal();
    const a = await createContact(p.token, { firstName: "Dee", lastName: "Double", phone: "+1 415 555 0142" });
    const b = await createContact(p.token, { firstName: "Dee", lastName: "Twice", phone: "(415) 555-0142" });
    await createContact(p.token, { firstName: "Zed", lastName: "Zip", address: { zipCode: "94110" } });
    await createContact(p.token, { firstName: "zed", lastName: "ZIP", address: { zipCode: "94110" } });
    const client = await connect(p.token);

    // Page by page (a page holds one kind of group), each page the route's page for the same cursor.
    const groups: { reason: string; contacts: { id: string }[] }[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await ok(client, "find_duplicates", cursor ? { cursor } : {});
      const http = await data(`/v1/contacts/duplicates${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""}`, p.token);
      expect(page).toEqual({ groups: http.data, pagination: http.pagination });
      groups.push(...page.groups);
      if (!page.pagination.hasMore) break;
      cursor = page.pagination.nextCursor;
    }
    expect(groups.map((g) => g.reason)).toEqual(["phone", "name_zip"]);
    expect(groups[0]!.contacts.map((c) => c.id).sort()).toEqual([a.id, b.id].sort());
    const phones = await ok(client, "find_duplicates", { reason: "phone", limit: 1 });
    const httpPhones = await data("/v1/contacts/duplicates?reason=phone&limit=1", p.token);
    expect(phones).toEqual({ groups: httpPhones.data, pagination: httpPhones.pagination });
    expect(phones.groups).toEqual([groups[0]]);

    expect(issuesOf(await tool(client, "find_duplicates", { reason: "email", limit: 0 }))).toEqual([
      "limit too_small",
      "reason invalid_enum_value",
    ]);
    expect(issuesOf(await tool(client, "find_duplicates", { cursor: "not-a-cursor" }))).toEqual(["cursor invalid_cursor"]);
    const stranger = await connect((await createPrincipal()).token);
    expect((await ok(stranger, "find_duplicates")).groups).toEqual([]);
    await Promise.all([client.close(), stranger.close()]);
  });
});

describe("MCP CRM tools: lead intake", () => {
  it("submit_lead takes a lead in as POST /v1/leads: created, matched, kept for review; a repeat answers the same", async () => {
    const p = await createPrincipal();
    const client = await connect(p.token);
    const email = uniqueEmail("lead");
    const body = { source: "zillow", sourceEventId: "z-1", person: { firstName: "Lee", lastName: "Lead", emails: [email] }, message: "Hi" };

    const created = await ok(client, "submit_lead", body);
    expect(created).toEqual({
      outcome: "created",
      lead: {
        contactId: expect.any(String),
        created: true,
        matchedBy: null,
        assignedTo: expect.toBeOneOf([null, p.userId]),
        conflicts: [],
      },
    });
    // The route answers the same event with the tool's answer, as its first.
    const again = await call("POST", "/v1/leads", { token: p.token, body });
    expect(again.status).toBe(201);
    expect((await json(again)).data).toEqual(created.lead);
    const contact = await getContact(p.token, created.lead.contactId);
    expect(contact).toMatchObject({ email, firstName: "Lee", source: "ZILLOW" });
    const [event] = await outboxEvents(p.organizationId, "contact.created");
    expect(event).toMatchObject({ actor: { userId: p.userId }, data: { object: { id: contact.id, email } } });

    const matched = await ok(client, "submit_lead", { source: "WEBSITE", person: { emails: [email.toUpperCase()] } });
    const http = await call("POST", "/v1/leads", { token: p.token, body: { source: "WEBSITE", person: { emails: [email] } } });
    expect(http.status).toBe(200);
    expect(matched).toEqual({ outcome: "matched", lead: (await json(http)).data });
    expect(matched.lead).toMatchObject({ contactId: contact.id, created: false, matchedBy: "email" });

    const review = await ok(client, "submit_lead", { source: "WEBSITE", person: { phones: ["(415) 555-0166"] } });
    expect(review).toEqual({ outcome: "kept_for_review", lead: { received: true, reviewId: expect.any(String) } });
    expect((await data("/v1/leads/reviews", p.token)).data.map((r: { id: string }) => r.id)).toEqual([review.lead.reviewId]);
    await client.close();
  });

  it("submit_lead tells a key without contacts:read nothing, and still takes the lead in", async () => {
    const p = await createPrincipal();
    const known = await createContact(p.token);
    const form = await createApiKey(p.token, ["leads:write"]);
    const client = await connect(form.key);
    for (const person of [{ emails: [known.email] }, { emails: [uniqueEmail("new")] }]) {
      expect(await ok(client, "submit_lead", { source: "WEBSITE", person }), JSON.stringify(person)).toEqual({
        outcome: "received",
        lead: { received: true },
      });
    }
    // Stored, then taken in after the answer (leads/inbox.ts); the new person becomes a contact.
    await expect.poll(async () => (await data("/v1/contacts", p.token)).pagination.total, { timeout: 5000, interval: 100 }).toBe(2);
    await client.close();
  });

  it("submit_lead answers the route's refusals as tool errors with issues, and another organization's property is none", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const theirs = await createProperty(stranger.token);
    const client = await connect(p.token);
    expect(issuesOf(await tool(client, "submit_lead", { source: "WEBSITE", person: {} }))).toEqual(["person contact_point_required"]);
    expect(issuesOf(await tool(client, "submit_lead", { source: "!", person: { emails: ["x"] } }))).toEqual([
      "person.emails.0 invalid_email",
      "source invalid_format",
    ]);
    expect(issuesOf(await tool(client, "submit_lead", { source: "WEBSITE", person: { phones: ["12"] } }))).toEqual([
      "person.phones.0 invalid_phone",
    ]);
    expect(
      issuesOf(await tool(client, "submit_lead", { source: "WEBSITE", person: { emails: [uniqueEmail()] }, propertyId: theirs.id })),
    ).toEqual(["propertyId invalid_reference"]);
    // A person of another organization is nobody here: a new contact of the caller's own.
    const theirContact = await createContact(stranger.token);
    const created = await ok(client, "submit_lead", { source: "WEBSITE", person: { emails: [theirContact.email] } });
    expect(created).toMatchObject({ outcome: "created", lead: { created: true } });
    expect(created.lead.contactId).not.toBe(theirContact.id);
    expect((await data("/v1/contacts", stranger.token)).pagination.total).toBe(1);
    await client.close();
  });
});

describe("MCP CRM tools: deals", () => {
  it("get_deal answers GET /v1/deals/{id} with its tasks and activities; another organization's id is not found", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    await createTask(p.token, deal.id, { dueDate: day(2) });
    const client = await connect(p.token);

    const plain = await ok(client, "get_deal", { dealId: deal.id });
    expect(plain.deal).toEqual((await data(`/v1/deals/${deal.id}`, p.token)).data);
    const whole = await ok(client, "get_deal", { dealId: deal.id, include: ["tasks", "activities", "contact"] });
    expect(whole.deal).toEqual((await data(`/v1/deals/${deal.id}?include=tasks,activities,contact`, p.token)).data);
    expect(whole.deal.tasks).toHaveLength(1);
    expect(whole.deal.activities.map((a: { type: string }) => a.type)).toEqual(["TASK_CREATED", "DEAL_CREATED"]);

    expect(issuesOf(await tool(client, "get_deal", { dealId: deal.id, include: ["notes"] }))).toEqual(["include.0 invalid_enum_value"]);
    const dealsOnly = await connect((await createApiKey(p.token, ["deals:read"])).key);
    expect(await tool(dealsOnly, "get_deal", { dealId: deal.id, include: ["contact"] })).toMatchObject({
      isError: true,
      data: { error: "insufficient_permission" },
    });
    const stranger = await connect((await createPrincipal()).token);
    await notFound(stranger, "get_deal", { dealId: deal.id });
    await Promise.all([client.close(), dealsOnly.close(), stranger.close()]);
  });

  it("create_deal creates as POST /v1/deals does, emitting deal.created; another organization's contact is an invalid reference", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const client = await connect(p.token);

    const created = await ok(client, "create_deal", {
      title: "12 Oak Ave sale",
      type: "SALE",
      amount: 750_000,
      contactId: contact.id,
      stage: "QUALIFIED",
      commission: { rate: 0.025 },
      assignedTo: p.userId,
      timeline: { closingDate: day(30) },
    });
    expect(created.deal).toMatchObject({ stage: "QUALIFIED", status: "ACTIVE", probability: 20, commission: { amount: 18_750 } });
    expect(created.deal).toEqual(await getDeal(p.token, created.deal.id));
    const [event] = await outboxEvents(p.organizationId, "deal.created");
    expect(event).toMatchObject({ actor: { userId: p.userId }, data: { object: created.deal } });

    expect(issuesOf(await tool(client, "create_deal", { title: "", type: "BARTER", contactId: contact.id, id: "x" }))).toEqual([
      "amount required",
      "id unknown_field",
      "title invalid_character",
      "title too_small",
      "type invalid_enum_value",
    ]);
    expect(
      issuesOf(await tool(client, "create_deal", { title: "Closed", type: "SALE", amount: 1, contactId: contact.id, stage: "CLOSED" })),
    ).toHaveLength(1);
    const stranger = await createPrincipal();
    const theirs = await connect(stranger.token);
    expect(issuesOf(await tool(theirs, "create_deal", { title: "Mine", type: "SALE", amount: 1, contactId: contact.id }))).toEqual([
      "contactId invalid_reference",
    ]);
    expect((await data("/v1/deals", stranger.token)).data).toEqual([]);
    expect((await data("/v1/deals", p.token)).pagination.total).toBe(1);
    await Promise.all([client.close(), theirs.close()]);
  });

  it("update_deal sets fields and moves the stage as PUT does, emitting deal.updated and deal.stage_changed", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token, { amount: 300_000 });
    const client = await connect(p.token);

    const updated = await ok(client, "update_deal", { dealId: deal.id, amount: 320_000, stage: "NEGOTIATION", reason: "Counter offer" });
    expect(updated.deal).toMatchObject({ amount: 320_000, stage: "NEGOTIATION", probability: 50 });
    expect(updated.deal).toEqual(await getDeal(p.token, deal.id));
    expect((await outboxEvents(p.organizationId, "deal.updated")).at(-1)).toMatchObject({
      actor: { userId: p.userId },
      data: { object: { id: deal.id, amount: 320_000, stage: "NEGOTIATION" } },
    });
    expect(await outboxEvents(p.organizationId, "deal.stage_changed")).toEqual([
      expect.objectContaining({
        data: expect.objectContaining({ stageChange: { previousStage: "LEAD", newStage: "NEGOTIATION", reason: "Counter offer" } }),
      }),
    ]);
    // The same set again: nothing changes, nothing is emitted (move_deal would refuse it).
    expect((await ok(client, "update_deal", { dealId: deal.id, stage: "NEGOTIATION", amount: 320_000 })).deal).toEqual(updated.deal);
    expect(await outboxEvents(p.organizationId, "deal.updated")).toHaveLength(1);

    expect(issuesOf(await tool(client, "update_deal", { dealId: deal.id, probability: 101, stage: "WON" }))).toEqual([
      "probability too_big",
      "stage invalid_enum_value",
    ]);
    const stranger = await connect((await createPrincipal()).token);
    await notFound(stranger, "update_deal", { dealId: deal.id, amount: 1 });
    expect((await getDeal(p.token, deal.id)).amount).toBe(320_000);
    await Promise.all([client.close(), stranger.close()]);
  });

  it("add_deal_task and complete_deal_task do what the task routes do, emitting deal.task_created and deal.task_completed", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const client = await connect(p.token);

    const added = await ok(client, "add_deal_task", {
      dealId: deal.id,
      title: "Order the inspection",
      dueDate: day(3),
      priority: "HIGH",
      assignedTo: p.userId,
    });
    expect(added.task).toMatchObject({ title: "Order the inspection", dueDate: day(3), priority: "HIGH", completed: false });
    expect((await data(`/v1/deals/${deal.id}/tasks`, p.token)).data).toEqual([added.task]);
    expect(await outboxEvents(p.organizationId, "deal.task_created")).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ task: added.task }) }),
    ]);

    const done = await ok(client, "complete_deal_task", { dealId: deal.id, taskId: added.task.id });
    expect(done.task).toMatchObject({ id: added.task.id, completed: true, completedAt: expect.any(String) });
    expect((await data(`/v1/deals/${deal.id}/tasks`, p.token)).data).toEqual([done.task]);
    expect(await outboxEvents(p.organizationId, "deal.task_completed")).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ task: done.task }) }),
    ]);
    expect(await tool(client, "complete_deal_task", { dealId: deal.id, taskId: added.task.id })).toMatchObject({
      isError: true,
      data: { error: "task_already_completed" },
    });
    const other = await createDeal(p.token);
    await notFound(client, "complete_deal_task", { dealId: other.id, taskId: added.task.id });

    expect(issuesOf(await tool(client, "add_deal_task", { dealId: deal.id, title: "", dueDate: "2026-02-30", priority: "LATER" }))).toEqual(
      ["dueDate invalid_date", "priority invalid_enum_value", "title invalid_character", "title too_small"],
    );
    const stranger = await createPrincipal();
    expect(issuesOf(await tool(client, "add_deal_task", { dealId: deal.id, title: "Theirs", assignedTo: stranger.userId }))).toEqual([
      "assignedTo invalid_reference",
    ]);
    expect(issuesOf(await tool(client, "complete_deal_task", { dealId: deal.id, taskId: "" }))).toEqual(["taskId too_small"]);
    const theirs = await connect(stranger.token);
    await notFound(theirs, "add_deal_task", { dealId: deal.id, title: "Sneak" });
    await notFound(theirs, "complete_deal_task", { dealId: deal.id, taskId: added.task.id });
    expect((await data(`/v1/deals/${deal.id}/tasks`, p.token)).data).toEqual([done.task]);
    expect(await outboxEvents(p.organizationId, "deal.task_created")).toHaveLength(1);
    await Promise.all([client.close(), theirs.close()]);
  });
});

describe("MCP CRM tools: my_tasks", () => {
  it("lists the caller's open tasks due today or overdue, soonest first, with their deals; withinDays reaches further", async () => {
    const p = await createPrincipal();
    const colleague = await addAgent(p.organizationId, "Cole League");
    const deal = await createDeal(p.token, { title: "9 Elm St purchase" });
    const other = await createDeal(p.token, { title: "4 Ash Rd sale" });
    const mine = { assignedTo: p.userId };
    const todayAt = await createTask(p.token, other.id, { ...mine, title: "Call at noon", dueDate: `${day(0)}T12:00:00Z` });
    const overdue = await createTask(p.token, deal.id, { ...mine, title: "Overdue", dueDate: day(-3) });
    const today = await createTask(p.token, deal.id, { ...mine, title: "Today", dueDate: day(0) });
    const tomorrow = await createTask(p.token, deal.id, { ...mine, title: "Tomorrow", dueDate: day(1) });
    await createTask(p.token, deal.id, { ...mine, title: "Someday" });
    await createTask(p.token, deal.id, { assignedTo: colleague, title: "Theirs", dueDate: day(-1) });
    await createTask(p.token, deal.id, { title: "Nobody's", dueDate: day(-1) });
    const finished = await createTask(p.token, deal.id, { ...mine, title: "Done", dueDate: day(-1) });
    expect((await call("POST", `/v1/deals/${deal.id}/tasks/${finished.id}/complete`, { token: p.token })).status).toBe(200);
    // A deal in the trash took its tasks with it.
    const gone = await createDeal(p.token);
    await createTask(p.token, gone.id, { ...mine, title: "Trashed", dueDate: day(-1) });
    expect((await call("DELETE", `/v1/deals/${gone.id}`, { token: p.token })).status).toBe(200);
    const client = await connect(p.token);

    const withDeal = (task: Record<string, unknown>, d: Record<string, any>) => ({ ...task, dealId: d.id, dealTitle: d.title });
    const due = await ok(client, "my_tasks");
    expect(due.tasks).toEqual([withDeal(overdue, deal), withDeal(today, deal), withDeal(todayAt, other)]);
    expect(due.pagination).toEqual({ hasMore: false, nextCursor: null, total: 3, limit: 25 });
    // As the deal's task route shows them.
    const routeTasks = (await data(`/v1/deals/${deal.id}/tasks`, p.token)).data;
    expect(routeTasks).toEqual(expect.arrayContaining([overdue, today]));

    const week = await ok(client, "my_tasks", { withinDays: 7 });
    expect(week.tasks.map((t: { id: string }) => t.id)).toEqual([overdue.id, today.id, todayAt.id, tomorrow.id]);

    // Page by page: every task once, in order, the total on each page.
    const walked: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await ok(client, "my_tasks", { withinDays: 7, limit: 1, ...(cursor ? { cursor } : {}) });
      expect(page.pagination.total).toBe(4);
      walked.push(...page.tasks.map((t: { id: string }) => t.id));
      if (!page.pagination.hasMore) break;
      cursor = page.pagination.nextCursor;
    }
    expect(walked).toEqual(week.tasks.map((t: { id: string }) => t.id));

    // The colleague's own list, and another organization's: none of the caller's.
    const stranger = await connect((await createPrincipal()).token);
    expect(await ok(stranger, "my_tasks", { withinDays: 365 })).toMatchObject({ tasks: [], pagination: { total: 0 } });

    expect(issuesOf(await tool(client, "my_tasks", { withinDays: 366, limit: 101 }))).toEqual(["limit too_big", "withinDays too_big"]);
    expect(issuesOf(await tool(client, "my_tasks", { cursor: "garbage" }))).toEqual(["cursor invalid_cursor"]);
    await Promise.all([client.close(), stranger.close()]);
  });

  it("reads one index range per page: the assignee's open tasks due before the day, in order, never a sort", async () => {
    const db = createDb(env.DB_SHARD_0);
    const before = dueBefore(0, new Date());
    expect(before).toBe(day(1));
    // The plan needs no organization's rows: every shard has the one schema.
    for (const cursor of [undefined, encodeCursor({ sort: "dueDate:asc", values: [day(-2)], id: "task-plan" })]) {
      const [page, total] = dueTaskStatements(db, "org-plan", "user-plan", { withinDays: 0, limit: 25, cursor }, before);
      const pagePlan = await queryPlan(page);
      expect(pagePlan, String(cursor)).toMatch(
        cursor
          ? /SEARCH tasks USING INDEX tasks_assignee_due_idx \(organization_id=\? AND assigned_to=\? AND completed=\? AND due_at>\? AND due_at<\?\)/
          : /SEARCH tasks USING INDEX tasks_assignee_due_idx \(organization_id=\? AND assigned_to=\? AND completed=\? AND due_at<\?\)/,
      );
      expect(pagePlan).toMatch(/SEARCH deals USING INDEX sqlite_autoindex_deals_1 \(id=\?\)/);
      expect(pagePlan).not.toMatch(/TEMP B-TREE/);
      expect(await queryPlan(total)).toMatch(/SEARCH tasks USING COVERING INDEX tasks_assignee_due_idx/);
    }
  });
});

describe("MCP CRM tools: the organization", () => {
  it("list_users answers GET /v1/users: the caller's organization's users with id, name, e-mail and role", async () => {
    const p = await createPrincipal();
    const agent = await addAgent(p.organizationId, "Ann Agent");
    const client = await connect(p.token);
    const listed = await ok(client, "list_users");
    const http = await data("/v1/users", p.token);
    expect(listed).toEqual({ users: http.data, pagination: http.pagination });
    expect(listed.users.map((u: { id: string }) => u.id).sort()).toEqual([p.userId, agent].sort());
    expect(listed.users.find((u: { id: string }) => u.id === agent)).toMatchObject({
      name: "Ann Agent",
      email: `${agent}@example.test`,
      role: expect.toBeOneOf(["owner", "admin", "agent"]),
    });
    const first = await ok(client, "list_users", { limit: 1 });
    const second = await ok(client, "list_users", { limit: 1, cursor: first.pagination.nextCursor });
    expect([...first.users, ...second.users]).toEqual(listed.users);

    expect(issuesOf(await tool(client, "list_users", { limit: 0, role: "agent" }))).toEqual(["limit too_small", "role unknown_field"]);
    const stranger = await createPrincipal();
    const theirs = await connect(stranger.token);
    expect((await ok(theirs, "list_users")).users.map((u: { id: string }) => u.id)).toEqual([stranger.userId]);
    await Promise.all([client.close(), theirs.close()]);
  });

  it("list_custom_fields answers GET /v1/custom-fields, by kind of record, for the caller's organization only", async () => {
    const p = await createPrincipal();
    for (const body of [
      { object: "contact", key: "budget", label: "Budget", type: "number" },
      { object: "deal", key: "lender", label: "Lender", type: "select", options: ["bank", "credit_union"] },
    ]) {
      const res = await call("POST", "/v1/custom-fields", { token: p.token, body });
      expect(res.status, await res.clone().text()).toBe(201);
    }
    const client = await connect(p.token);
    const all = await ok(client, "list_custom_fields");
    const http = await data("/v1/custom-fields", p.token);
    expect(all).toEqual({ customFields: http.data, pagination: http.pagination });
    expect(all.customFields.map((f: { key: string }) => f.key)).toEqual(["lender", "budget"]);
    const deals = await ok(client, "list_custom_fields", { object: "deal" });
    expect(deals.customFields).toEqual([expect.objectContaining({ key: "lender", type: "select", options: ["bank", "credit_union"] })]);
    // The key is what a record's customFields take.
    const contact = await ok(client, "update_contact", { contactId: (await createContact(p.token)).id, customFields: { budget: 900_000 } });
    expect(contact.contact.customFields).toEqual({ budget: 900_000 });

    expect(issuesOf(await tool(client, "list_custom_fields", { object: "task" }))).toEqual(["object invalid_enum_value"]);
    const stranger = await connect((await createPrincipal()).token);
    expect(await ok(stranger, "list_custom_fields")).toMatchObject({ customFields: [], pagination: { total: 0 } });
    await Promise.all([client.close(), stranger.close()]);
  });
});
