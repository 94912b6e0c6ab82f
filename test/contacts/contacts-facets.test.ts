// Filtered contact totals over type, status, source and assignedTo are summed from per-combination counts moved in
// every contact write (src/contacts/facets.ts, issue 22): they must stay exact through every write path.
import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact, listPage, logActivity, updateContact } from "../helpers/contacts";
import { expectFacetsExact } from "../helpers/derived-figures";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";

/** The list's total of each filter equals the count of the rows it matches. */
async function expectTotalsExact(p: TestPrincipal, agent: string) {
  const db = await tenantDb(p.organizationId);
  const filters: [string, string, unknown[]][] = [
    ["type=CLIENT", "type = ?", ["CLIENT"]],
    ["type=LEAD&status=ACTIVE", "type = ? AND status = ?", ["LEAD", "ACTIVE"]],
    ["source=REFERRAL", "source = ?", ["REFERRAL"]],
    [`assignedTo=${agent}`, "assigned_to = ?", [agent]],
    [
      `type=CLIENT&status=INACTIVE&source=WEBSITE&assignedTo=${agent}`,
      "type = ? AND status = ? AND source = ? AND assigned_to = ?",
      ["CLIENT", "INACTIVE", "WEBSITE", agent],
    ],
  ];
  for (const [query, where, params] of filters) {
    const row = await db
      .prepare(`SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ? AND ${where}`)
      .bind(p.organizationId, ...params)
      .first<{ n: number }>();
    expect((await listPage(p.token, `limit=1&${query}`)).pagination.total, query).toBe(row!.n);
  }
  // Read from the facet counts: nothing was counted and cached per contacts version.
  const cached = await db
    .prepare("SELECT COUNT(*) AS n FROM list_totals WHERE organization_id = ? AND resource = 'contacts'")
    .bind(p.organizationId)
    .first<{ n: number }>();
  expect(cached!.n).toBe(0);
}

describe("contact facet totals", () => {
  it("stay exact through create, update, bulk update, activity, tags, delete, restore and erase", async () => {
    const p = await createPrincipal();
    const agent = p.userId;
    const made = [];
    for (const [type, status, source] of [
      ["LEAD", "ACTIVE", "WEBSITE"],
      ["CLIENT", "ACTIVE", "REFERRAL"],
      ["CLIENT", "INACTIVE", "WEBSITE"],
      ["LEAD", "ACTIVE", undefined],
      ["VENDOR", "ACTIVE", "REFERRAL"],
    ] as const) {
      made.push(await createContact(p.token, { type, status, ...(source ? { source } : {}), assignedTo: agent }));
    }
    await expectFacetsExact(p.organizationId);
    await expectTotalsExact(p, agent);

    await updateContact(p.token, made[0]!.id, { type: "CLIENT", source: "REFERRAL" });
    await updateContact(p.token, made[1]!.id, { assignedTo: null });
    await updateContact(p.token, made[2]!.id, { notes: "no facet moves" });
    await expectFacetsExact(p.organizationId);
    await expectTotalsExact(p, agent);

    const bulk = await call("PATCH", "/v1/contacts/bulk", {
      token: p.token,
      body: { contactIds: [made[3]!.id, made[4]!.id], updates: { status: "INACTIVE", type: "CLIENT", source: "WEBSITE" } },
    });
    expect(bulk.status, "bulk").toBe(200);
    await logActivity(p.token, made[3]!.id, { type: "PHONE_CALL" });
    expect((await call("POST", `/v1/contacts/${made[4]!.id}/tags`, { token: p.token, body: { tags: ["vip"] } })).status, "tags").toBe(200);
    await expectFacetsExact(p.organizationId);
    await expectTotalsExact(p, agent);

    expect((await call("DELETE", `/v1/contacts/${made[0]!.id}`, { token: p.token })).status, "delete 0").toBe(200);
    expect((await call("DELETE", `/v1/contacts/${made[3]!.id}`, { token: p.token })).status, "delete 3").toBe(200);
    await expectFacetsExact(p.organizationId);
    await expectTotalsExact(p, agent);
    expect((await call("POST", `/v1/contacts/${made[0]!.id}/restore`, { token: p.token })).status, "restore").toBe(200);
    const erased = await call("DELETE", `/v1/contacts/${made[4]!.id}?erase=true`, { token: p.token });
    expect(erased.status, JSON.stringify(await json(erased.clone()))).toBe(200);
    await expectFacetsExact(p.organizationId);
    await expectTotalsExact(p, agent);
  });

  it("stay exact when concurrent writes re-file the same contacts", async () => {
    const p = await createPrincipal();
    const a = await createContact(p.token, { type: "LEAD", status: "ACTIVE" });
    const b = await createContact(p.token, { type: "LEAD", status: "ACTIVE" });
    const writes = [
      ...["CLIENT", "VENDOR", "REFERRAL", "PAST_CLIENT"].map((type) =>
        call("PUT", `/v1/contacts/${a.id}`, { token: p.token, body: { type } }),
      ),
      ...["INACTIVE", "CONVERTED", "ACTIVE"].map((status) => call("PUT", `/v1/contacts/${a.id}`, { token: p.token, body: { status } })),
      call("PATCH", "/v1/contacts/bulk", { token: p.token, body: { contactIds: [a.id, b.id], updates: { source: "OPEN_HOUSE" } } }),
      call("DELETE", `/v1/contacts/${b.id}`, { token: p.token }),
      call("PUT", `/v1/contacts/${b.id}`, { token: p.token, body: { type: "CLIENT" } }),
    ];
    for (const res of await Promise.all(writes)) expect([200, 404]).toContain(res.status);
    await expectFacetsExact(p.organizationId);
    await expectTotalsExact(p, p.userId);
  });
});
