import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact, issuePairs } from "../helpers/contacts";
import { addAgent, createDeal, createTask as createDealTask } from "../helpers/deals";
import { createPrincipal } from "../helpers/factories";
import { createProperty } from "../helpers/properties";
import { createTask, eventsOf, expectError, listTasks } from "../helpers/tasks";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

describe("tasks", () => {
  it("creates a task with its defaults (type other, MEDIUM, the caller as assignee), reads it with its ETag, emits task.created", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/tasks", { token: p.token, body: { title: "Call the Smiths", dueAt: "2030-01-15T09:30:00+02:00" } });
    const created = await json(res);
    expect(res.status, JSON.stringify(created)).toBe(201);
    const task = created.data;
    expect(task).toEqual({
      id: expect.any(String),
      title: "Call the Smiths",
      type: "other",
      dueAt: "2030-01-15T07:30:00.000Z",
      assignedTo: p.userId,
      contactId: null,
      dealId: null,
      propertyId: null,
      priority: "MEDIUM",
      notes: null,
      status: "open",
      completedAt: null,
      completedBy: null,
      createdBy: p.userId,
      createdAt: expect.stringMatching(ISO),
      updatedAt: task.createdAt,
      version: 1,
    });
    expect(res.headers.get("etag")).toBe('"1"');
    const read = await call("GET", `/v1/tasks/${task.id}`, { token: p.token });
    expect(read.status).toBe(200);
    expect((await json(read)).data).toEqual(task);
    expect(read.headers.get("etag")).toBe('"1"');
    expect((await eventsOf(p.organizationId, "task.created")).map((e) => e.object)).toEqual([task]);
  });

  it("links a contact, a deal and a property of the organization; an unknown or foreign one is a 422 naming each", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const contact = await createContact(p.token);
    const deal = await createDeal(p.token, { contactId: contact.id });
    const property = await createProperty(p.token);
    const agent = await addAgent(p.organizationId, "Ann Agent");
    const task = await createTask(p.token, {
      title: "Showing at 12 Elm",
      type: "showing",
      contactId: contact.id,
      dealId: deal.id,
      propertyId: property.id,
      assignedTo: agent,
      priority: "URGENT",
      notes: "Bring the keys\nand the flyer",
    });
    expect(task).toMatchObject({ type: "showing", contactId: contact.id, dealId: deal.id, propertyId: property.id, assignedTo: agent });
    // The deal's own task list answers it as a deal task.
    const dealTasks = (await json(await call("GET", `/v1/deals/${deal.id}/tasks`, { token: p.token }))).data;
    expect(dealTasks).toEqual([
      expect.objectContaining({ id: task.id, title: "Showing at 12 Elm", description: "Bring the keys\nand the flyer", completed: false }),
    ]);

    const foreignContact = await createContact(other.token);
    const res = await call("POST", "/v1/tasks", {
      token: p.token,
      body: { title: "x", contactId: foreignContact.id, dealId: UNKNOWN_ID, propertyId: UNKNOWN_ID, assignedTo: other.userId },
    });
    const errors = await expectError(res, 422, "validation_error");
    expect(issuePairs(errors)).toEqual([
      "assignedTo:invalid_reference",
      "contactId:invalid_reference",
      "dealId:invalid_reference",
      "propertyId:invalid_reference",
    ]);
    expect(await eventsOf(p.organizationId, "task.created")).toHaveLength(1);
  });

  it("refuses a bad body with every problem listed and never 5xx", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/tasks", {
      token: p.token,
      body: { type: "visit", dueAt: "tomorrow", priority: "NOW", colour: "red" },
    });
    const errors = await expectError(res, 422, "validation_error");
    expect(issuePairs(errors).map((pair) => pair.split(":")[0])).toEqual(["colour", "dueAt", "priority", "title", "type"]);
  });

  it("refuses a due time that is not in the years 1900 to 9999 in UTC, on /v1/tasks and the deal's route", async () => {
    // 9999-12-31T23:00-14:00 is 10000-01-01T13:00Z: stored as "+010000-…" it sorted before every date and read as overdue.
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const late = "9999-12-31T23:00:00-14:00";
    const early = "1900-01-01T00:30:00+01:00";
    for (const dueAt of [late, early]) {
      const res = await call("POST", "/v1/tasks", { token: p.token, body: { title: "Far off", dueAt } });
      expect(issuePairs(await expectError(res, 422, "validation_error"))).toEqual(["dueAt:out_of_range"]);
    }
    const task = await createTask(p.token, { title: "Soon", dueAt: "9999-12-31T09:00:00Z" });
    expect(task.dueAt).toBe("9999-12-31T09:00:00.000Z");
    const moved = await call("PATCH", `/v1/tasks/${task.id}`, { token: p.token, body: { dueAt: late } });
    expect(issuePairs(await expectError(moved, 422, "validation_error"))).toEqual(["dueAt:out_of_range"]);
    const onDeal = await call("POST", `/v1/deals/${deal.id}/tasks`, { token: p.token, body: { title: "Far off", dueDate: late } });
    expect(issuePairs(await expectError(onDeal, 422, "validation_error"))).toEqual(["dueDate:invalid_date"]);
    expect((await listTasks(p.token, "?due=overdue&at=2030-01-01T00:00:00Z")).data).toEqual([]);
  });

  it("changes only the fields sent, honours If-Match, emits task.updated with what changed", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const task = await createTask(p.token, { title: "Follow up", type: "follow_up", notes: "n" });
    const res = await call("PATCH", `/v1/tasks/${task.id}`, {
      token: p.token,
      body: { priority: "HIGH", contactId: contact.id, notes: null },
      headers: { "if-match": '"1"' },
    });
    const updated = (await json(res)).data;
    expect(res.status).toBe(200);
    expect(updated).toMatchObject({
      title: "Follow up",
      type: "follow_up",
      priority: "HIGH",
      contactId: contact.id,
      notes: null,
      version: 2,
    });
    expect(updated.updatedAt >= task.updatedAt).toBe(true);
    expect(res.headers.get("etag")).toBe('"2"');
    const [event] = await eventsOf(p.organizationId, "task.updated");
    expect(event!.changes.sort()).toEqual(["contactId", "notes", "priority"]);
    expect(event!.previousAttributes).toMatchObject({ priority: "MEDIUM", contactId: null, notes: "n" });

    const stale = await call("PATCH", `/v1/tasks/${task.id}`, { token: p.token, body: { title: "Late" }, headers: { "if-match": '"1"' } });
    await expectError(stale, 412, "precondition_failed");
    // Nothing changed: no write, no event.
    const same = await call("PATCH", `/v1/tasks/${task.id}`, { token: p.token, body: { priority: "HIGH" } });
    expect((await json(same)).data.version).toBe(2);
    expect(await eventsOf(p.organizationId, "task.updated")).toHaveLength(1);
    const bad = await call("PATCH", `/v1/tasks/${task.id}`, { token: p.token, body: { dealId: UNKNOWN_ID } });
    expect(issuePairs(await expectError(bad, 422, "validation_error"))).toEqual(["dealId:invalid_reference"]);
  });

  it("deletes a task for good: reads answer 404 after, task.deleted carries the task as it was", async () => {
    const p = await createPrincipal();
    const task = await createTask(p.token);
    const res = await call("DELETE", `/v1/tasks/${task.id}`, { token: p.token });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true, message: "Task deleted", data: { id: task.id, deleted: true } });
    await expectError(await call("GET", `/v1/tasks/${task.id}`, { token: p.token }), 404, "not_found");
    await expectError(await call("DELETE", `/v1/tasks/${task.id}`, { token: p.token }), 404, "not_found");
    expect((await eventsOf(p.organizationId, "task.deleted")).map((e) => e.object)).toEqual([task]);
  });

  it("completes a task once: completedBy and completedAt, a TASK activity on its contact; again is a 409", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const task = await createTask(p.token, { title: "Call about the offer", type: "call", contactId: contact.id });
    const res = await call("POST", `/v1/tasks/${task.id}/complete`, { token: p.token });
    const done = (await json(res)).data;
    expect(res.status).toBe(200);
    expect(done).toEqual({
      ...task,
      status: "completed",
      completedAt: expect.stringMatching(ISO),
      completedBy: p.userId,
      updatedAt: done.completedAt,
      version: 2,
    });
    const activities = (await json(await call("GET", `/v1/contacts/${contact.id}/activities`, { token: p.token }))).data;
    expect(activities).toEqual([
      expect.objectContaining({
        type: "TASK",
        description: "Task completed: Call about the offer",
        metadata: { taskId: task.id, taskType: "call" },
      }),
    ]);
    const again = await call("POST", `/v1/tasks/${task.id}/complete`, { token: p.token });
    await expectError(again, 409, "task_already_completed");
    const [event] = await eventsOf(p.organizationId, "task.completed");
    expect(event).toMatchObject({ object: done, changes: expect.arrayContaining(["status", "completedAt", "completedBy"]) });
    expect(await eventsOf(p.organizationId, "task.completed")).toHaveLength(1);
  });

  it("of two completes at once, one wins and the other answers 409; one activity, one event", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const task = await createTask(p.token, { contactId: contact.id });
    const answers = await Promise.all([0, 1].map(() => call("POST", `/v1/tasks/${task.id}/complete`, { token: p.token })));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(await eventsOf(p.organizationId, "task.completed")).toHaveLength(1);
    const activities = (await json(await call("GET", `/v1/contacts/${contact.id}/activities`, { token: p.token }))).data;
    expect(activities.filter((a: { type: string }) => a.type === "TASK")).toHaveLength(1);
  });

  it("a deal task completed through the deal's route shows who completed it on /v1/tasks; the deal route answers as before", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const dealTask = await createDealTask(p.token, deal.id, { title: "Order appraisal", dueDate: "2030-02-01" });
    const before = (await json(await call("GET", `/v1/tasks/${dealTask.id}`, { token: p.token }))).data;
    expect(before).toMatchObject({
      dealId: deal.id,
      dueAt: "2030-02-01",
      title: "Order appraisal",
      status: "open",
      version: 1,
      assignedTo: null,
    });
    const res = await call("POST", `/v1/deals/${deal.id}/tasks/${dealTask.id}/complete`, { token: p.token });
    const done = (await json(res)).data;
    expect(Object.keys(done).sort()).toEqual(Object.keys(dealTask).sort());
    const after = (await json(await call("GET", `/v1/tasks/${dealTask.id}`, { token: p.token }))).data;
    expect(after).toMatchObject({
      status: "completed",
      completedBy: p.userId,
      completedAt: done.completedAt,
      updatedAt: done.completedAt,
      version: 2,
    });
    await expectError(await call("POST", `/v1/tasks/${dealTask.id}/complete`, { token: p.token }), 409, "task_already_completed");
  });

  it("a deal task completed through /v1/tasks is on its deal as the deal's route records it: an activity, deal.task_completed", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const dealTask = await createDealTask(p.token, deal.id, { title: "Book the inspector" });
    const res = await call("POST", `/v1/tasks/${dealTask.id}/complete`, { token: p.token });
    expect(res.status).toBe(200);
    const activities = (await json(await call("GET", `/v1/deals/${deal.id}/activities`, { token: p.token }))).data;
    expect(activities.filter((a: { type: string }) => a.type === "TASK_COMPLETED")).toEqual([
      expect.objectContaining({ description: "Task completed: Book the inspector" }),
    ]);
    const [event] = await eventsOf(p.organizationId, "deal.task_completed");
    expect(event).toMatchObject({ object: { id: deal.id }, task: { id: dealTask.id, completed: true } });
    expect(await eventsOf(p.organizationId, "task.completed")).toHaveLength(1);
    const shown = (await json(await call("GET", `/v1/deals/${deal.id}`, { token: p.token }))).data;
    expect(shown.lastActivityAt).toBe((await json(res)).data.completedAt);
  });

  it("another organization's task is a 404 on every route", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const task = await createTask(p.token);
    for (const [method, path] of [
      ["GET", `/v1/tasks/${task.id}`],
      ["PATCH", `/v1/tasks/${task.id}`],
      ["DELETE", `/v1/tasks/${task.id}`],
      ["POST", `/v1/tasks/${task.id}/complete`],
    ] as const) {
      const res = await call(method, path, { token: other.token, ...(method === "PATCH" ? { body: { title: "mine" } } : {}) });
      await expectError(res, 404, "not_found");
    }
  });
});
