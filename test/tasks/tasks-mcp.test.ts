import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { addAgent } from "../helpers/deals";
import { createPrincipal } from "../helpers/factories";
import { connect, tool } from "../helpers/mcp";
import { createTask, eventsOf } from "../helpers/tasks";

const HOUR = 3_600_000;
const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

describe("MCP task tools", () => {
  it("list_my_tasks answers my overdue and today's tasks by default, each narrowed by `due`; complete_task completes one once", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    // The organization keeps UTC: the day is the UTC day. A task due in a minute is due today unless today ends sooner.
    const endOfDay = new Date(new Date().toISOString().slice(0, 10)).getTime() + 24 * HOUR;
    const laterToday = new Date(Math.min(Date.now() + 60_000, endOfDay - 1)).toISOString();
    const overdue = await createTask(p.token, { title: "Overdue call", type: "call", dueAt: iso(-48 * HOUR), contactId: contact.id });
    const today = await createTask(p.token, { title: "Later today", dueAt: laterToday });
    await createTask(p.token, { title: "Next week", dueAt: iso(7 * 24 * HOUR) });
    await createTask(p.token, { title: "Undated" });
    await createTask(p.token, { title: "Not mine", dueAt: iso(-HOUR), assignedTo: await addAgent(p.organizationId, "Other") });

    const client = await connect(p.token);
    const mine = await tool(client, "list_my_tasks");
    expect(mine.isError, mine.text).toBe(false);
    expect(mine.data.tasks.map((t: { title: string }) => t.title)).toEqual(["Overdue call", "Later today"]);
    expect(mine.data.pagination.total).toBe(2);
    expect((await tool(client, "list_my_tasks", { due: "upcoming" })).data.tasks.map((t: { title: string }) => t.title)).toEqual([
      "Next week",
    ]);
    expect((await tool(client, "list_my_tasks", { due: "overdue" })).data.tasks.map((t: { id: string }) => t.id)).toEqual([overdue.id]);

    const done = await tool(client, "complete_task", { taskId: overdue.id });
    expect(done.isError, done.text).toBe(false);
    expect(done.data.task).toMatchObject({ id: overdue.id, status: "completed", completedBy: p.userId });
    const again = await tool(client, "complete_task", { taskId: overdue.id });
    expect(again).toMatchObject({ isError: true, data: { error: "task_already_completed" } });
    expect((await tool(client, "list_my_tasks")).data.tasks.map((t: { id: string }) => t.id)).toEqual([today.id]);
    expect(await eventsOf(p.organizationId, "task.completed")).toHaveLength(1);
    const activities = (await json(await call("GET", `/v1/contacts/${contact.id}/activities`, { token: p.token }))).data;
    expect(activities.map((a: { type: string }) => a.type)).toEqual(["TASK"]);
    await client.close();
  });

  it("complete_task on another organization's task answers not_found", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const theirs = await createTask(other.token);
    const client = await connect(p.token);
    expect(await tool(client, "complete_task", { taskId: theirs.id })).toMatchObject({ isError: true, data: { error: "not_found" } });
    await client.close();
  });
});
