import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { addAgent, createDeal, createTask as createDealTask } from "../helpers/deals";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import { createTask, expectError, listTasks, walkTitles } from "../helpers/tasks";

/** 23:30 on 14 January in New York (UTC-5), and 00:30 on the 15th: the two sides of the organization's midnight. */
const BEFORE_MIDNIGHT = "2030-01-15T04:30:00.000Z";
const AFTER_MIDNIGHT = "2030-01-15T05:30:00.000Z";

async function inNewYork(p: TestPrincipal): Promise<void> {
  const res = await call("PATCH", "/v1/organization", { token: p.token, body: { timeZone: "America/New_York" } });
  expect(res.status, JSON.stringify(await json(res.clone()))).toBe(200);
}

const titles = async (token: string, query: string) => (await listTasks(token, query)).data.map((t) => t.title);

describe("GET /v1/tasks", () => {
  it("answers overdue, today and upcoming by the organization's date, on both sides of its midnight", async () => {
    const p = await createPrincipal();
    await inNewYork(p);
    const deal = await createDeal(p.token);
    const mine = { assignedTo: p.userId };
    await createTask(p.token, { title: "A 07:00 on the 14th", dueAt: "2030-01-14T12:00:00Z" });
    await createTask(p.token, { title: "B 23:45 on the 14th", dueAt: "2030-01-14T23:45:00-05:00" });
    await createTask(p.token, { title: "C 01:00 on the 15th", dueAt: "2030-01-15T06:00:00Z" });
    await createTask(p.token, { title: "D 23:59 on the 15th", dueAt: "2030-01-16T04:59:00Z" });
    await createTask(p.token, { title: "E 00:00 on the 16th", dueAt: "2030-01-16T05:00:00Z" });
    await createTask(p.token, { title: "F undated" });
    await createDealTask(p.token, deal.id, { title: "G the 15th", dueDate: "2030-01-15", ...mine });
    await createDealTask(p.token, deal.id, { title: "H the 14th", dueDate: "2030-01-14", ...mine });
    const done = await createTask(p.token, { title: "I done on the 14th", dueAt: "2030-01-14T13:00:00Z" });
    expect((await call("POST", `/v1/tasks/${done.id}/complete`, { token: p.token })).status).toBe(200);
    // Someone else's tasks stay out of "me".
    const agent = await addAgent(p.organizationId, "Other Agent");
    await createTask(p.token, { title: "Z theirs", dueAt: "2030-01-14T12:00:00Z", assignedTo: agent });

    const at = (iso: string) => `&at=${encodeURIComponent(iso)}`;
    const me = "?assignedTo=me";
    expect(await titles(p.token, `${me}&due=overdue${at(BEFORE_MIDNIGHT)}`)).toEqual(["A 07:00 on the 14th"]);
    expect(await titles(p.token, `${me}&due=today${at(BEFORE_MIDNIGHT)}`)).toEqual([
      "H the 14th",
      "A 07:00 on the 14th",
      "B 23:45 on the 14th",
    ]);
    expect(await titles(p.token, `${me}&due=upcoming${at(BEFORE_MIDNIGHT)}`)).toEqual([
      "G the 15th",
      "C 01:00 on the 15th",
      "D 23:59 on the 15th",
      "E 00:00 on the 16th",
    ]);
    expect(await titles(p.token, `${me}&due=today&status=completed${at(BEFORE_MIDNIGHT)}`)).toEqual(["I done on the 14th"]);

    expect(await titles(p.token, `${me}&due=overdue${at(AFTER_MIDNIGHT)}`)).toEqual([
      "H the 14th",
      "A 07:00 on the 14th",
      "B 23:45 on the 14th",
    ]);
    expect(await titles(p.token, `${me}&due=today${at(AFTER_MIDNIGHT)}`)).toEqual([
      "G the 15th",
      "C 01:00 on the 15th",
      "D 23:59 on the 15th",
    ]);
    expect(await titles(p.token, `${me}&due=upcoming${at(AFTER_MIDNIGHT)}`)).toEqual(["E 00:00 on the 16th"]);
    // The totals count the whole window, a page at a time.
    const walked = await walkTitles(p.token, `${me}&due=overdue${at(AFTER_MIDNIGHT)}`, 2);
    expect(walked).toEqual({ titles: ["H the 14th", "A 07:00 on the 14th", "B 23:45 on the 14th"], totals: [3, 3] });
    // Without an assignee: the organization's (Z included).
    expect(await titles(p.token, `?due=overdue${at(BEFORE_MIDNIGHT)}`)).toEqual(
      expect.arrayContaining(["A 07:00 on the 14th", "Z theirs"]),
    );
    expect((await listTasks(p.token, `?due=overdue${at(BEFORE_MIDNIGHT)}`)).pagination.total).toBe(2);
    // Nobody's: the tasks without an assignee, as the contacts list reads `none`.
    await createTask(p.token, { title: "Y nobody's", dueAt: "2030-01-14T12:00:00Z", assignedTo: null });
    expect(await titles(p.token, `?assignedTo=none&due=overdue${at(BEFORE_MIDNIGHT)}`)).toEqual(["Y nobody's"]);
    expect((await listTasks(p.token, `?assignedTo=none${at(BEFORE_MIDNIGHT)}`)).pagination.total).toBe(1);
    // The same instants in UTC: the 15th has begun at both.
    const utc = await createPrincipal();
    await createTask(utc.token, { title: "B", dueAt: "2030-01-14T23:45:00-05:00" });
    expect(await titles(utc.token, `${me}&due=today${at(BEFORE_MIDNIGHT)}`)).toEqual(["B"]);
  });

  it("walks every open task once in due order (undated first) with exact totals; filters by contact and deal", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const deal = await createDeal(p.token, { contactId: contact.id });
    const made = ["2031-01-03T00:00:00Z", null, "2031-01-01T00:00:00Z", null, "2031-01-02T00:00:00Z", "2031-01-01T00:00:00Z"];
    for (const [i, dueAt] of made.entries())
      await createTask(p.token, { title: `t${i}`, dueAt, ...(i % 2 ? { contactId: contact.id } : { dealId: deal.id }) });
    const { titles: all, totals } = await walkTitles(p.token, "", 2);
    expect(all.slice(0, 2).sort()).toEqual(["t1", "t3"]);
    expect(all.slice(2, 4).sort()).toEqual(["t2", "t5"]);
    expect(all.slice(4)).toEqual(["t4", "t0"]);
    expect(totals).toEqual([6, 6, 6]);
    expect((await walkTitles(p.token, `?contactId=${contact.id}`, 1)).titles.sort()).toEqual(["t1", "t3", "t5"]);
    expect((await walkTitles(p.token, `?dealId=${deal.id}`, 1)).titles).toEqual(["t2", "t4", "t0"]);
    expect((await listTasks(p.token, "?status=completed")).pagination.total).toBe(0);
  });

  it("refuses unbounded or unknown parameters and an overdue list of completed tasks", async () => {
    const p = await createPrincipal();
    for (const query of ["?limit=0", "?limit=101", "?due=soon", "?status=done", "?colour=red", "?cursor=nonsense"])
      await expectError(await call("GET", `/v1/tasks${query}`, { token: p.token }), 422, "validation_error");
    await expectError(await call("GET", "/v1/tasks?due=overdue&status=completed", { token: p.token }), 422, "validation_error");
    await expectError(await call("GET", "/v1/tasks"), 401, "unauthorized");
  });
});
