import { expect } from "vitest";
import type { TestPrincipal } from "./factories";
import { call, json } from "./client";
import { allOnShards } from "./documents";

/** The hex SHA-256 of a text, computed here independently of src. */
export async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

let ipSeq = 1;
/** A client address no other request of this file uses (rate limits count per address). */
export const freshIp = () => {
  const n = ipSeq++;
  return `172.${16 + ((n >> 16) & 15)}.${(n >> 8) & 255}.${n & 255}`;
};

export interface Published {
  id: string;
  versionHash: string;
}

/** POST /api/clickwrap, expecting 201. */
export async function publish(owner: TestPrincipal, input: { key: string; title: string; body: string }): Promise<Published> {
  const res = await call("POST", "/api/clickwrap", { token: owner.token, body: input });
  expect(res.status).toBe(201);
  return json<Published>(res);
}

/** A fresh agreement with a unique key. */
export async function newAgreement(owner: TestPrincipal, over: Partial<{ key: string; title: string; body: string }> = {}) {
  const input = { key: `terms-${crypto.randomUUID()}`, title: "Terms of service", body: "Be kind to each other.", ...over };
  return { ...(await publish(owner, input)), ...input };
}

export const publicGet = (id: string, ip = freshIp()) =>
  call("GET", `/api/public/clickwrap/${encodeURIComponent(id)}`, { headers: { "cf-connecting-ip": ip } });

export const publicAccept = (id: string, body?: Record<string, unknown>, headers: Record<string, string> = {}) =>
  call("POST", `/api/public/clickwrap/${encodeURIComponent(id)}`, {
    body,
    headers: { "cf-connecting-ip": freshIp(), "user-agent": "vitest clickwrap", ...headers },
  });

export const consent = (id: string, query = "", ip = freshIp()) =>
  call("GET", `/consent/${encodeURIComponent(id)}${query}`, { headers: { "cf-connecting-ip": ip } });

export interface AcceptanceRow {
  id: string;
  versionHash: string;
  subjectRef: string | null;
  acceptedAt: string;
  ip: string | null;
  userAgent: string | null;
}

export interface AcceptanceList {
  acceptances: AcceptanceRow[];
  versionHash: string;
  acceptedCurrentVersion?: boolean;
}

export async function acceptancesOf(owner: TestPrincipal, id: string, query = ""): Promise<AcceptanceList> {
  const res = await call("GET", `/api/clickwrap/${id}/acceptances${query}`, { token: owner.token });
  expect(res.status).toBe(200);
  return json<AcceptanceList>(res);
}

export async function detailOf(owner: TestPrincipal, id: string) {
  const res = await call("GET", `/api/clickwrap/${id}`, { token: owner.token });
  expect(res.status).toBe(200);
  return json(res);
}

/** Acceptances stored for an agreement, read straight from D1. */
export const storedAcceptances = async (agreementId: string) =>
  (await allOnShards<{ n: number }>("SELECT COUNT(*) AS n FROM clickwrap_acceptances WHERE agreement_id = ?", agreementId)).reduce(
    (sum, r) => sum + r.n,
    0,
  );
