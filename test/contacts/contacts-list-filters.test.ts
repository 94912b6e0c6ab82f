// The contact list's filters of issue 46 (smart lists): lastContactedAt, assignedTo=none, relative date bounds,
// hasOpenTask. The smart lists themselves: test/smart-lists/.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call } from "../helpers/client";
import { createContact, expectCrmError, issuePairs, listPage, logCommunication } from "../helpers/contacts";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";

const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** An open (or completed) task on the contact, through the tasks' routes. */
async function addTask(p: TestPrincipal, contactId: string, completed = false) {
  const res = await call("POST", "/v1/tasks", { token: p.token, body: { title: "Call back", type: "call", contactId } });
  expect(res.status).toBe(201);
  const id = ((await res.json()) as { data: { id: string } }).data.id;
  if (completed) expect((await call("POST", `/v1/tasks/${id}/complete`, { token: p.token })).status).toBe(200);
  return id;
}

describe("GET /v1/contacts: the smart-list filters", () => {
  it("lastContactedAt never, bounds (absolute and relative) and assignedTo=none", async () => {
    const p = await createPrincipal();
    const never = await createContact(p.token);
    const recent = await createContact(p.token, { assignedTo: p.userId });
    const old = await createContact(p.token);
    await logCommunication(p.token, recent.id, { type: "email", direction: "outbound", occurredAt: iso(Date.now() - 2 * DAY) });
    await logCommunication(p.token, old.id, { type: "email", direction: "outbound", occurredAt: iso(Date.now() - 40 * DAY) });
    const ids = async (q: string) => (await listPage(p.token, q)).data.map((c) => c.id).sort();
    const total = async (q: string) => (await listPage(p.token, q)).pagination.total;

    expect(await ids("lastContactedAt=never")).toEqual([never.id]);
    expect(await ids("lastContactedAt[lte]=-P30D")).toEqual([old.id]);
    expect(await ids("lastContactedAt[gte]=-P7D")).toEqual([recent.id]);
    expect(await ids(`lastContactedAt[gte]=${iso(Date.now() - 41 * DAY)}&lastContactedAt[lte]=-P1D`)).toEqual([old.id, recent.id].sort());
    expect(await ids("assignedTo=none")).toEqual([never.id, old.id].sort());
    expect(await total("assignedTo=none")).toBe(2);
    expect(await ids(`assignedTo=${p.userId}`)).toEqual([recent.id]);
    expect(await ids("assignedTo=none&lastContactedAt=never")).toEqual([never.id]);
    expect(await total("assignedTo=none&lastContactedAt=never")).toBe(1);
    expect(await total("createdAt[gte]=-P7D")).toBe(3);
    expect(await total("createdAt[lte]=-P7D")).toBe(0);
    expect(await total("createdAt[gte]=-PT1H&createdAt[lte]=PT1H")).toBe(3);
  });

  it("a bound past the year 9999 (relative or through an offset) is the end of time, never a string that sorts first", async () => {
    // P9999Y from now, and 9999-12-31T23:00-14:00, fall in the year 10000: "+010000-…" compared below every date.
    const p = await createPrincipal();
    await createContact(p.token);
    const total = async (q: string) => (await listPage(p.token, q)).pagination.total;
    expect(await total("createdAt[gte]=P9999Y")).toBe(0);
    expect(await total("createdAt[lte]=P9999Y")).toBe(1);
    expect(await total("createdAt[gte]=-P9999Y")).toBe(1);
    expect(await total("createdAt[lte]=-P9999Y")).toBe(0);
    expect(await total("createdAt[gte]=P9999Y99999M99999W999999DT9999999H999999999M9999999999S")).toBe(0);
    const far = await call("GET", "/v1/contacts?createdAt[gte]=9999-12-31T23:00:00-14:00", { token: p.token });
    expect(issuePairs(await expectCrmError(far, 422, "validation_error"))).toEqual(["createdAt[gte]:invalid_date_bound"]);
  });

  it("hasOpenTask reads the tasks, open ones only, and its total follows a task write at once", async () => {
    const p = await createPrincipal();
    const a = await createContact(p.token);
    const b = await createContact(p.token);
    const c = await createContact(p.token);
    await addTask(p, a.id);
    await addTask(p, b.id, true);
    const page = await listPage(p.token, "hasOpenTask=true");
    expect(page.data.map((c) => c.id)).toEqual([a.id]);
    expect(page.pagination.total).toBe(1);
    expect((await listPage(p.token, "hasOpenTask=false")).pagination.total).toBe(2);
    const later = await addTask(p, b.id);
    expect((await listPage(p.token, "hasOpenTask=true")).pagination.total).toBe(2);
    expect((await listPage(p.token, "hasOpenTask=false")).pagination.total).toBe(1);
    // The total is cached per version: completing, moving and deleting a task each move it.
    expect((await call("POST", `/v1/tasks/${later}/complete`, { token: p.token })).status).toBe(200);
    expect((await listPage(p.token, "hasOpenTask=true")).pagination.total).toBe(1);
    const moved = await addTask(p, b.id);
    expect((await listPage(p.token, "hasOpenTask=true")).pagination.total).toBe(2);
    expect((await call("PATCH", `/v1/tasks/${moved}`, { token: p.token, body: { contactId: a.id } })).status).toBe(200);
    expect((await listPage(p.token, "hasOpenTask=true")).pagination.total).toBe(1);
    const deleted = await addTask(p, c.id);
    expect((await listPage(p.token, "hasOpenTask=true")).pagination.total).toBe(2);
    expect((await call("DELETE", `/v1/tasks/${deleted}`, { token: p.token })).status).toBe(200);
    expect((await listPage(p.token, "hasOpenTask=true")).pagination.total).toBe(1);
    expect((await listPage(p.token, "hasOpenTask=false")).pagination.total).toBe(2);
  });

  it("refuses bad values, listing every one", async () => {
    const p = await createPrincipal();
    const res = await call(
      "GET",
      "/v1/contacts?createdAt[gte]=-P7X&lastContactedAt[lte]=yesterday&hasOpenTask=maybe&lastContactedAt=sometimes",
      { token: p.token },
    );
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual([
      "createdAt[gte]:invalid_date_bound",
      "hasOpenTask:invalid_enum_value",
      "lastContactedAt:invalid_enum_value",
      "lastContactedAt[lte]:invalid_date_bound",
    ]);
    const both = await call("GET", "/v1/contacts?lastContactedAt=never&lastContactedAt[gte]=-P1D", { token: p.token });
    expect(issuePairs(await expectCrmError(both, 422, "validation_error"))).toEqual(["lastContactedAt[gte]:invalid_combination"]);
  });

  it("serves the new filters from indexes", async () => {
    const db = env.DB_SHARD_0;
    const plan = async (where: string) =>
      (
        await db
          .prepare(
            `EXPLAIN QUERY PLAN SELECT c.* FROM contacts c WHERE c.organization_id = 'o' AND ${where} ORDER BY c.created_at DESC, c.id DESC LIMIT 26`,
          )
          .all<{ detail: string }>()
      ).results
        .map((r) => r.detail)
        .join(" | ");
    expect(await plan("c.assigned_to IS NULL")).toContain("contacts_org_assigned_idx");
    expect(
      await plan("EXISTS (SELECT 1 FROM tasks t WHERE t.organization_id = c.organization_id AND t.contact_id = c.id AND t.completed = 0)"),
    ).toContain("tasks_org_contact_idx");
    expect(await plan("c.last_contacted_at IS NULL")).toMatch(/USING INDEX contacts_org_/);
    // A relative bound's cached total moves by counting only the range its bound crossed: a range of an index.
    const crossed = await db
      .prepare(
        "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM contacts c WHERE c.organization_id = 'o' AND c.last_contacted_at > '2026-01-01' AND c.last_contacted_at <= '2026-01-02'",
      )
      .all<{ detail: string }>();
    expect(crossed.results.map((r) => r.detail).join(" | ")).toContain(
      "contacts_org_last_contacted_idx (organization_id=? AND last_contacted_at>? AND last_contacted_at<?)",
    );
  });
});
