import { expect } from "vitest";
import { call, json } from "./client";
import { tenantDb } from "./factories";

export type TaskJson = Record<string, any> & { id: string; status: string; version: number };

/** POST /v1/tasks; fails the test unless 201. */
export async function createTask(token: string, body: Record<string, unknown> = {}): Promise<TaskJson> {
  const res = await call("POST", "/v1/tasks", { token, body: { title: "Call back", ...body } });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data;
}

/** GET /v1/tasks with `query`; fails the test unless 200. */
export async function listTasks(token: string, query = ""): Promise<{ data: TaskJson[]; pagination: Record<string, any> }> {
  const res = await call("GET", `/v1/tasks${query}`, { token });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  return payload;
}

/** The titles of every page of GET /v1/tasks with `query`, walked `limit` at a time, and the total each page answered. */
export async function walkTitles(token: string, query: string, limit = 2): Promise<{ titles: string[]; totals: number[] }> {
  const titles: string[] = [];
  const totals: number[] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? "&" : "?";
    const page = await listTasks(token, `${query}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`);
    titles.push(...page.data.map((t) => t.title as string));
    totals.push(page.pagination.total);
    cursor = page.pagination.nextCursor;
  } while (cursor);
  return { titles, totals };
}

/** The outbox of an organization for one event type, in the order the events were written. */
export async function eventsOf(organizationId: string, type: string): Promise<Record<string, any>[]> {
  const { results } = await (await tenantDb(organizationId))
    .prepare("SELECT data FROM outbox_events WHERE organization_id = ? AND type = ? ORDER BY occurred_at, rowid")
    .bind(organizationId, type)
    .all<{ data: string }>();
  return results.map((r) => JSON.parse(r.data));
}

/** Expects a CRM error with `status` and the machine-readable `code`; returns its errors[]. */
export async function expectError(
  res: Response,
  status: number,
  code: string,
): Promise<{ field: string; code: string; message: string }[]> {
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(status);
  expect(body.success).toBe(false);
  expect(body.error.code, JSON.stringify(body)).toBe(code);
  return body.error.errors;
}
