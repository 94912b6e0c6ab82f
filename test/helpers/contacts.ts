import { expect } from "vitest";
import { call, json } from "./client";

/** A contact as the API answers it (loosely typed: tests assert on the shape). */
export type ContactJson = Record<string, any> & {
  id: string;
  lastName: string;
  createdAt: string;
  updatedAt: string;
  leadScore: number | null;
};

let seq = 0;
/** A unique e-mail per call, so tests never clash on the per-organization e-mail uniqueness. */
export const uniqueEmail = (prefix = "c") =>
  `${prefix}.${Date.now().toString(36)}.${(seq++).toString(36)}.${crypto.randomUUID().slice(0, 8)}@example.test`;

/** POST /v1/contacts and return the created contact; fails the test unless the answer is 201. */
export async function createContact(token: string, overrides: Record<string, unknown> = {}): Promise<ContactJson> {
  const body = { firstName: "Test", lastName: "Contact", email: uniqueEmail(), ...overrides };
  const res = await call("POST", "/v1/contacts", { token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data as ContactJson;
}

/** Creates contacts one after another (distinct createdAt/updatedAt order is then the creation order). */
export async function createContacts(token: string, list: Record<string, unknown>[]): Promise<ContactJson[]> {
  const out: ContactJson[] = [];
  for (const overrides of list) out.push(await createContact(token, overrides));
  return out;
}

export async function getContact(token: string, id: string, query = ""): Promise<ContactJson> {
  const res = await call("GET", `/v1/contacts/${id}${query}`, { token });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  return payload.data as ContactJson;
}

export async function updateContact(token: string, id: string, body: Record<string, unknown>): Promise<ContactJson> {
  const res = await call("PUT", `/v1/contacts/${id}`, { token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  return payload.data as ContactJson;
}

export async function logActivity(token: string, id: string, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await call("POST", `/v1/contacts/${id}/activities`, { token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data;
}

/** POST /v1/contacts/{id}/communications; fails the test unless the answer is 201. */
export async function logCommunication(
  token: string,
  id: string,
  body: Record<string, unknown>,
  headers?: Record<string, string>,
): Promise<Record<string, any>> {
  const res = await call("POST", `/v1/contacts/${id}/communications`, { token, body, headers });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data;
}

export interface ListPage {
  data: ContactJson[];
  pagination: { hasMore: boolean; nextCursor: string | null; total: number; totalExact?: boolean; limit: number };
}

/** GET /v1/contacts with a query string (without the leading "?"); fails the test unless 200. */
export async function listPage(token: string, query = ""): Promise<ListPage> {
  const res = await call("GET", `/v1/contacts${query ? `?${query}` : ""}`, { token });
  const payload = await json(res);
  expect(res.status, `${query}: ${JSON.stringify(payload)}`).toBe(200);
  expect(payload.success).toBe(true);
  return payload as ListPage;
}

/**
 * Walks every page of GET /v1/contacts following nextCursor; `between` runs after each page (to insert rows mid-walk).
 * Returns the contacts in the order served and the pages seen.
 */
export async function listAll(
  token: string,
  query = "",
  between?: (pageIndex: number) => Promise<void>,
): Promise<{ contacts: ContactJson[]; pages: ListPage[] }> {
  const contacts: ContactJson[] = [];
  const pages: ListPage[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const q = [query, cursor ? `cursor=${encodeURIComponent(cursor)}` : ""].filter(Boolean).join("&");
    const page = await listPage(token, q);
    pages.push(page);
    contacts.push(...page.data);
    if (!page.pagination.hasMore) {
      expect(page.pagination.nextCursor).toBeNull();
      return { contacts, pages };
    }
    expect(page.pagination.nextCursor).toEqual(expect.any(String));
    cursor = page.pagination.nextCursor;
    if (between) await between(i);
  }
  throw new Error("cursor walk did not end");
}

/** Expects a CRM error body with the given status and type; returns its errors[]. */
export async function expectCrmError(
  res: Response,
  status: number,
  type: string,
): Promise<{ field: string; code: string; message: string }[]> {
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(status);
  expect(body).toEqual({
    success: false,
    error: { type, code: expect.any(String), title: expect.any(String), status, detail: expect.any(String), errors: expect.any(Array) },
  });
  for (const e of body.error.errors)
    expect(e).toEqual({ field: expect.any(String), code: expect.any(String), message: expect.any(String) });
  return body.error.errors;
}

/** The (field, code) pairs of a 422's errors[], for order-independent comparison. */
export const issuePairs = (errors: { field: string; code: string }[]) => errors.map((e) => `${e.field}:${e.code}`).sort();

/** Lets the clock move on (inside workerd time only advances across I/O / timers), so timestamps differ. */
export const tick = (ms = 2) => new Promise((resolve) => setTimeout(resolve, ms));

type Dir = "asc" | "desc";
/** The order the API promises for a sort: each field in its direction (lastName case-insensitive, no score = -1), then id. */
export function sortContacts(
  list: ContactJson[],
  sort: [field: "createdAt" | "updatedAt" | "lastName" | "leadScore", dir: Dir][],
): ContactJson[] {
  const value = (c: ContactJson, f: string): string | number =>
    f === "lastName" ? c.lastName.toLowerCase() : f === "leadScore" ? (c.leadScore ?? -1) : (c[f] as string);
  const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);
  return [...list].sort((a, b) => {
    for (const [f, d] of sort) {
      const c = cmp(value(a, f), value(b, f));
      if (c !== 0) return d === "asc" ? c : -c;
    }
    const c = cmp(a.id, b.id);
    return sort[0]![1] === "asc" ? c : -c;
  });
}
