// The daily brief reads the agent's appointments of the day (issue 46: "and the daily_brief reads them"): the ones they
// attend or made, starting today, not cancelled; another user's and another day's stay out.
import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import { connect, tool } from "../helpers/mcp";

const today = (hour: number) => {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), hour)).toISOString();
};

async function appointment(p: TestPrincipal, startsAt: string, extra: Record<string, unknown> = {}): Promise<string> {
  const endsAt = new Date(Date.parse(startsAt) + 30 * 60_000).toISOString();
  const res = await call("POST", "/v1/appointments", {
    token: p.token,
    body: { type: "other", startsAt, endsAt, timeZone: "UTC", location: "Office", ...extra },
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await json(res)).data.id;
}

describe("the daily brief's appointments", () => {
  it("lists the user's appointments starting today in start order, with the total, and none of anyone else's", async () => {
    const me = await createPrincipal();
    const peer = await createPrincipal({ organizationId: me.organizationId, role: "agent" });
    const late = await appointment(me, today(22));
    const early = await appointment(peer, today(1), { attendees: [{ userId: me.userId }] });
    await appointment(peer, today(12));
    const cancelled = await appointment(me, today(14));
    expect((await call("POST", `/v1/appointments/${cancelled}/cancel`, { token: me.token, body: {} })).status).toBe(200);
    await appointment(me, new Date(Date.parse(today(12)) + 86_400_000).toISOString());

    const client = await connect(me.token);
    const brief = await tool(client, "daily_brief", { limit: 1 });
    expect(brief.isError, brief.text).toBe(false);
    expect(brief.data.appointmentsToday).toEqual({ total: 2, items: [expect.objectContaining({ id: early, location: "Office" })] });
    const all = await tool(client, "daily_brief");
    expect(all.data.appointmentsToday.items.map((a: { id: string }) => a.id)).toEqual([early, late]);
    await client.close();
  });
});
