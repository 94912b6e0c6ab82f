import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import worker from "../../src/index";
import { announceDueTasks } from "../../src/tasks/service";
import { call } from "../helpers/client";
import { createDeal, createTask as createDealTask } from "../helpers/deals";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { createTask, eventsOf } from "../helpers/tasks";

/** Passes over the organization's shard at `now` until nothing is left to announce (other files' tasks share it). */
async function passUntilDone(organizationId: string, now: string, together = 1): Promise<void> {
  const db = createDb(await tenantDb(organizationId));
  for (;;) {
    const counts = await Promise.all(Array.from({ length: together }, () => announceDueTasks(env, db, new Date(now))));
    if (counts.every((n) => n === 0)) return;
  }
}

const dueTitles = async (organizationId: string) =>
  (await eventsOf(organizationId, "task.due")).map((e) => e.object.title as string).sort();

describe("task.due", () => {
  it("is staged once per task when its due time comes, under passes that overlap; not for completed or undated tasks", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const first = await createTask(p.token, { title: "ten", dueAt: "2032-01-01T10:00:00Z" });
    await createTask(p.token, { title: "noon", dueAt: "2032-01-01T12:00:00Z" });
    await createTask(p.token, { title: "undated" });
    const done = await createTask(p.token, { title: "done", dueAt: "2032-01-01T09:00:00Z" });
    expect((await call("POST", `/v1/tasks/${done.id}/complete`, { token: p.token })).status).toBe(200);
    await createDealTask(p.token, deal.id, { title: "the day", dueDate: "2032-01-01" });

    await passUntilDone(p.organizationId, "2032-01-01T09:59:59Z");
    expect(await dueTitles(p.organizationId)).toEqual(["the day"]);
    await passUntilDone(p.organizationId, "2032-01-01T11:00:00Z", 3);
    expect(await dueTitles(p.organizationId)).toEqual(["ten", "the day"]);
    await passUntilDone(p.organizationId, "2032-01-01T11:00:00Z", 2);
    expect(await dueTitles(p.organizationId)).toEqual(["ten", "the day"]);
    const [event] = (await eventsOf(p.organizationId, "task.due")).filter((e) => e.object.id === first.id);
    expect(event!.object).toMatchObject({ id: first.id, dueAt: "2032-01-01T10:00:00.000Z", status: "open" });

    // A moved due time is announced again when it comes.
    expect((await call("PATCH", `/v1/tasks/${first.id}`, { token: p.token, body: { dueAt: "2032-01-02T10:00:00Z" } })).status).toBe(200);
    await passUntilDone(p.organizationId, "2032-01-01T13:00:00Z", 2);
    expect(await dueTitles(p.organizationId)).toEqual(["noon", "ten", "the day"]);
    await passUntilDone(p.organizationId, "2032-01-02T10:00:00Z", 2);
    expect(await dueTitles(p.organizationId)).toEqual(["noon", "ten", "ten", "the day"]);
  });

  it("runs in the Worker's scheduled handler at the scheduled time", async () => {
    const p = await createPrincipal();
    await createTask(p.token, { title: "past", dueAt: "2020-01-01T10:00:00Z" });
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: Date.parse("2020-01-01T10:00:00Z") }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect(await dueTitles(p.organizationId)).toEqual(["past"]);
  });
});
