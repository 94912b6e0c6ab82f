import { env } from "cloudflare:workers";
import { expect, vi } from "vitest";
import { decryptText } from "../../src/lib/secret-box";
import { MAIL_LOG_PURPOSE } from "../../src/mail/mailer";
import { everyShard } from "../../src/shards/bindings";
import { call, json } from "./client";
import { createPrincipal } from "./factories";

/** A valid on/standard-lease canonical draft (DESIGN.md contract 4) with the given parties. */
export function leaseCanonical(opts: { tenants?: { name: string; email: string }[]; landlords?: { name: string; email: string }[] } = {}) {
  return {
    schemaVersion: 1,
    formKey: "on/standard-lease",
    lease: {
      tenants: opts.tenants ?? [{ name: "Tess Tenant", email: "tess@tenant.test" }],
      landlords: opts.landlords ?? [{ name: "Lars Landlord", email: "lars@landlord.test" }],
      property: { address: { street: "1 Queen St W", city: "Toronto", province: "ON" } },
      term: { commencement: { year: 2027, month: 1, day: 1 }, end: { year: 2027, month: 12, day: 31 } },
      monthlyRent: { cents: 250_000 },
      deposit: { cents: 250_000 },
    },
    provenance: { aiDrafted: false },
  };
}

export async function createDocument(token: string, canonical: Record<string, unknown> = leaseCanonical()) {
  const res = await call("POST", "/api/documents", { token, body: { formKey: canonical.formKey, canonical } });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body as { id: string; status: string; formKey: string; sha256: string };
}

export interface Sent {
  envelopeId: string;
  links: { signerId: string; name: string; email: string; role: string; url: string }[];
}

export async function sendForSignature(token: string, documentId: string, body: Record<string, unknown> = {}): Promise<Sent> {
  const res = await call("POST", `/api/documents/${documentId}/signature`, { token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload as Sent;
}

export const tokenOf = (url: string) => url.slice(url.lastIndexOf("/sign/") + 6);

let ipSeq = Math.floor(Math.random() * 1e6);
/** A distinct client address per call, so the per-IP limits of the public routes stay out of functional tests. */
export const freshIp = () => {
  const n = ipSeq++;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
};

/** A public signing call from its own client address. */
export const publicSign = (method: "GET" | "POST", token: string, body?: unknown, ip = freshIp()) =>
  call(method, `/api/public/sign/${encodeURIComponent(token)}`, {
    body,
    headers: { "cf-connecting-ip": ip, "user-agent": "vitest signer" },
  });

/** Walks one signer through open, authenticate, consent and sign; answers the sign response body. */
export async function signAll(token: string): Promise<{ ok: true; completed: boolean }> {
  expect((await publicSign("GET", token)).status).toBe(200);
  expect((await publicSign("POST", token, { action: "authenticate", codeVerified: true })).status).toBe(200);
  expect((await publicSign("POST", token, { action: "consent" })).status).toBe(200);
  const res = await publicSign("POST", token, { action: "sign" });
  expect(res.status).toBe(200);
  return json(res);
}

/**
 * Every tenant shard (issue 24), for a test that reads or moves a row by an id that does not name its organization:
 * a unique id is on one shard, so a read takes the first row found and a write by id touches that one alone.
 */
const shards = () => everyShard(env).map((s) => s.db);

export async function firstOnShards<T>(sql: string, ...binds: unknown[]): Promise<T | null> {
  for (const db of shards()) {
    const row = await db
      .prepare(sql)
      .bind(...binds)
      .first<T>();
    if (row !== null) return row;
  }
  return null;
}

export async function allOnShards<T>(sql: string, ...binds: unknown[]): Promise<T[]> {
  return (
    await Promise.all(
      shards().map(
        async (db) =>
          (
            await db
              .prepare(sql)
              .bind(...binds)
              .all<T>()
          ).results,
      ),
    )
  ).flat();
}

export async function runOnShards(sql: string, ...binds: unknown[]): Promise<void> {
  await Promise.all(
    shards().map((db) =>
      db
        .prepare(sql)
        .bind(...binds)
        .run(),
    ),
  );
}

/** Messages the `log` mail provider kept for `to`, bodies opened with the test key, on whichever shard keeps them. */
export async function mailTo(to: string): Promise<{ subject: string; text: string }[]> {
  const rows = await allOnShards<{ id: string; subject: string; body: string; sealed: number; created_at: string }>(
    'SELECT id, subject, body, sealed, created_at FROM mail_outbox WHERE "to" = ?',
    to,
  );
  rows.sort((a, b) => a.created_at.localeCompare(b.created_at));
  return Promise.all(
    rows.map(async (r) => ({
      subject: r.subject,
      text: r.sealed ? await decryptText(env.MAIL_LOG_KEY!, MAIL_LOG_PURPOSE, r.id, r.body) : r.body,
    })),
  );
}

export const linkIn = (text: string) => text.match(/https?:\/\/\S+\/sign\/\S+/)?.[0] ?? null;

/**
 * The newest signing code mailed to `email`, once at least `count` have been mailed (the mail leaves after the answer,
 * so a test that asked for its second code waits for the second mail).
 */
export async function signingCodeFor(email: string, count = 1): Promise<string> {
  let code = "";
  await vi.waitFor(async () => {
    const mails = (await mailTo(email)).filter((m) => m.subject.startsWith("Your signing code"));
    expect(mails.length).toBeGreaterThanOrEqual(count);
    code = mails.at(-1)?.text.match(/\b(\d{6})\b/)?.[1] ?? "";
    expect(code).toMatch(/^\d{6}$/);
  });
  return code;
}

/** A new organization's envelope of one signer, whose link was opened. */
export async function openedSigner(verification: "code" | "attested" = "code") {
  const owner = await createPrincipal();
  const email = `${crypto.randomUUID()}@signer.test`;
  const doc = await createDocument(owner.token, leaseCanonical());
  const sent = await sendForSignature(owner.token, doc.id, {
    signerVerification: verification,
    signers: [{ name: "Sam Signer", email, role: "tenant" }],
  });
  const token = tokenOf(sent.links[0]!.url);
  expect((await publicSign("GET", token)).status).toBe(200);
  return { owner, doc, sent, token, email, envelopeId: sent.envelopeId };
}
