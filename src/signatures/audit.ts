import { asc, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { envelopeAudit } from "../db/schema";
import type { Statement } from "../db/write";
import { canonicalJson } from "../lib/canonical-json";
import { sha256Hex } from "../lib/crypto";

/**
 * The envelope's audit trail as a hash chain: each entry's hash is the SHA-256 of the previous entry's hash and the
 * entry's own fields, so changing, removing or reordering any entry breaks every hash after it. Rows are appended
 * only by the envelope's Durable Object (one writer, in order) and the migration's triggers refuse UPDATE and DELETE.
 */
export type AuditEvent =
  | "sent"
  | "code_sent"
  | "opened"
  | "authenticated"
  | "consented"
  | "signed"
  | "declined"
  | "voided"
  | "expired"
  | "reminded"
  | "expiry_notice"
  // A signer's code verification locked after too many wrong codes, and a new link the sender sent them.
  | "verification_locked"
  | "resent"
  // Issue 44: an approver's approval or rejection, a viewer having seen the document.
  | "approved"
  | "rejected"
  | "viewed"
  // Issue 45: a sender asked for an embedded signer's view URL, a host started an in-person session, and one was opened.
  | "view_requested"
  | "host_session_started"
  | "session_opened";

export interface AuditInput {
  event: AuditEvent;
  signerId: string | null;
  at: string;
  ip: string | null;
  userAgent: string | null;
  data: Record<string, unknown> | null;
}

export type AuditRow = typeof envelopeAudit.$inferSelect;

/** The hash before the first entry. */
export const GENESIS = "0".repeat(64);

const entryHash = (envelopeId: string, seq: number, prevHash: string, e: AuditInput) =>
  sha256Hex(canonicalJson([prevHash, envelopeId, seq, e.event, e.signerId, e.at, e.ip, e.userAgent, e.data]));

/** The last entry's position and hash (GENESIS for an empty trail). */
export interface ChainHead {
  seq: number;
  hash: string;
}

/** Insert statements appending `entries` after `head`, and the new head. */
export async function appendAudit(
  db: Db,
  organizationId: string,
  envelopeId: string,
  head: ChainHead,
  entries: AuditInput[],
): Promise<{ statements: Statement[]; head: ChainHead }> {
  const statements: Statement[] = [];
  let { seq, hash } = head;
  for (const e of entries) {
    const next = seq + 1;
    const h = await entryHash(envelopeId, next, hash, e);
    statements.push(db.insert(envelopeAudit).values({ envelopeId, seq: next, organizationId, ...e, prevHash: hash, hash: h }));
    seq = next;
    hash = h;
  }
  return { statements, head: { seq, hash } };
}

export const readAudit = (db: Db, envelopeId: string) =>
  db.select().from(envelopeAudit).where(eq(envelopeAudit.envelopeId, envelopeId)).orderBy(asc(envelopeAudit.seq));

/** Recomputes the chain: valid when every entry links to the one before and hashes to what it says. */
export async function verifyChain(envelopeId: string, rows: AuditRow[]) {
  let prev = GENESIS;
  for (const [i, r] of rows.entries()) {
    const expected = await entryHash(envelopeId, i + 1, prev, {
      event: r.event as AuditEvent,
      signerId: r.signerId,
      at: r.at,
      ip: r.ip,
      userAgent: r.userAgent,
      data: r.data,
    });
    if (r.seq !== i + 1 || r.prevHash !== prev || r.hash !== expected)
      return { valid: false, head: rows.at(-1)?.hash ?? null, length: rows.length, brokenAt: r.seq };
    prev = r.hash;
  }
  return { valid: true, head: rows.at(-1)?.hash ?? null, length: rows.length, brokenAt: null };
}
