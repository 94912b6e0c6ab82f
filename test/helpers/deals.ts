import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { newId } from "../../src/lib/ids";
import { addMembers } from "../../src/shards/placement";
import { call, json } from "./client";
import { createContact } from "./contacts";

/** A deal as the API answers it (loosely typed: tests assert on the shape). */
export type DealJson = Record<string, any> & { id: string; stage: string; status: string; amount: number; contactId: string };

/** A valid create body for `contactId`; `overrides` replace fields. */
export function dealBody(contactId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { title: "123 Main St purchase", type: "PURCHASE", amount: 500000, contactId, ...overrides };
}

/**
 * Another member of an organization, with a distinct name (an agent a deal is assigned to). Written like any member:
 * the directory, then the copy on the organization's shard, which is where deal reads join the name (issue 24).
 */
export async function addAgent(organizationId: string, name: string): Promise<string> {
  const id = newId();
  await addMembers(env, [{ id, organizationId, email: `${id}@example.test`, name, createdAt: new Date().toISOString() }]);
  return id;
}

/** POST /v1/deals (with a fresh contact unless one is named); fails the test unless 201. */
export async function createDeal(token: string, overrides: Record<string, unknown> = {}): Promise<DealJson> {
  const contactId = (overrides.contactId as string | undefined) ?? (await createContact(token)).id;
  const res = await call("POST", "/v1/deals", { token, body: dealBody(contactId, overrides) });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data as DealJson;
}

export async function getDeal(token: string, id: string, query = ""): Promise<DealJson> {
  const res = await call("GET", `/v1/deals/${id}${query}`, { token });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  return payload.data as DealJson;
}

export async function updateDeal(token: string, id: string, body: Record<string, unknown>): Promise<DealJson> {
  const res = await call("PUT", `/v1/deals/${id}`, { token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  return payload.data as DealJson;
}

/** POST /v1/deals/{id}/move; fails the test unless 200. */
export async function moveDeal(token: string, id: string, stage: string, extra: Record<string, unknown> = {}): Promise<DealJson> {
  const res = await call("POST", `/v1/deals/${id}/move`, { token, body: { stage, ...extra } });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  return payload.data as DealJson;
}

export async function createTask(token: string, dealId: string, body: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const res = await call("POST", `/v1/deals/${dealId}/tasks`, { token, body: { title: "Order inspection", ...body } });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data;
}

/** The bytes of a minimal PDF (its magic is what the upload checks). */
export const PDF_BYTES = new TextEncoder().encode("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");

/** A multipart document upload. */
export function documentForm(
  bytes: Uint8Array = PDF_BYTES,
  fields: Record<string, string> = {},
  fileName = "contract.pdf",
  type = "application/pdf",
): FormData {
  const form = new FormData();
  form.append("file", new File([bytes], fileName, { type }));
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return form;
}
