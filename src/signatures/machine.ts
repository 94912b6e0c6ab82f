import { and, desc, eq, isNotNull, sql } from "drizzle-orm";
import { createDb } from "../db/client";
import { documents, envelopeAudit, envelopes, envelopeSigners } from "../db/schema";
import type { EnvelopeStatus, SignerStatus } from "../db/signatures";
import { commit, expectVersion, type Statement, type VersionedTable } from "../db/write";
import type { Env } from "../env";
import { readConfig } from "../env";
import type { EventEnvelope } from "../events/envelope";
import { newEvent } from "../events/outbox";
import { newToken, sha256Hex } from "../lib/crypto";
import { loggableError } from "../lib/log";
import { nowIso } from "../lib/time";
import { mailerFor } from "../mail/mailer";
import type { ServiceContext } from "../platform/context";
import { type AuditInput, appendAudit, type ChainHead, GENESIS } from "./audit";
import type { SignerAction } from "./schemas";

/**
 * The envelope state machine (spec: States and transitions, Signer and Envelope). Every function here runs inside the
 * envelope's EnvelopeSigner Durable Object, one at a time (envelope-signer.ts); each write is also a compare-and-set
 * on the envelope's version and conditional on the signer's expected status, as a second guard.
 */
export type EnvelopeRow = typeof envelopes.$inferSelect;
export type SignerRow = typeof envelopeSigners.$inferSelect;

export interface RequestMeta {
  ip: string | null;
  userAgent: string | null;
}

export interface Loaded {
  envelope: EnvelopeRow;
  signers: SignerRow[];
  head: ChainHead;
}

export const ENVELOPES: VersionedTable = { table: envelopes, id: envelopes.id, organizationId: envelopes.organizationId, version: envelopes.version };
export const TERMINAL: ReadonlySet<EnvelopeStatus> = new Set(["completed", "declined", "voided", "expired"]);
const ACTIVE: ReadonlySet<SignerStatus> = new Set(["sent", "opened", "authenticated", "consented"]);

/** Which status each action moves a signer from, and to (spec: Signer state table). */
const MOVES: Record<Exclude<SignerAction["action"], "decline">, { from: SignerStatus; to: SignerStatus }> = {
  authenticate: { from: "opened", to: "authenticated" },
  consent: { from: "authenticated", to: "consented" },
  sign: { from: "consented", to: "signed" },
};

export const signingUrl = (env: Env, token: string) => `${readConfig(env).APP_URL.replace(/\/$/, "")}/sign/${token}`;

/** A new signing token (256 random bits) and its SHA-256, the only form stored. */
export async function mintToken(): Promise<{ token: string; hash: string }> {
  const token = newToken("sign");
  return { token, hash: await sha256Hex(token) };
}

/** The envelope, its signers in signing order and its audit chain head, in one D1 round trip. */
export async function loadEnvelope(env: Env, envelopeId: string): Promise<Loaded | null> {
  const db = createDb(env.DB);
  const [rows, signers, last] = await db.batch([
    db.select().from(envelopes).where(eq(envelopes.id, envelopeId)),
    db.select().from(envelopeSigners).where(eq(envelopeSigners.envelopeId, envelopeId)).orderBy(envelopeSigners.position),
    db.select({ seq: envelopeAudit.seq, hash: envelopeAudit.hash }).from(envelopeAudit).where(eq(envelopeAudit.envelopeId, envelopeId)).orderBy(desc(envelopeAudit.seq)).limit(1),
  ]);
  const envelope = rows[0];
  return envelope ? { envelope, signers, head: last[0] ?? { seq: 0, hash: GENESIS } } : null;
}

/** The service context a transition writes with: public actor, the envelope's organization, deferred work kept alive. */
function machineContext(env: Env, envelope: EnvelopeRow, defer: (work: Promise<unknown>) => void, actor: ServiceContext["actor"] = { type: "public", userId: null }): ServiceContext {
  return { env, db: createDb(env.DB), d1: env.DB, organizationId: envelope.organizationId, actor, requestId: "envelope-signer", defer };
}

interface Change {
  envelope?: Partial<Pick<EnvelopeRow, "status" | "completedAt" | "endedReason">>;
  signers?: { id: string; from: SignerStatus | SignerStatus[]; set: Partial<Pick<SignerRow, "status" | "tokenHash" | "sentAt" | "signedAt" | "declinedAt">> }[];
  /** Kills every live link of the envelope. */
  killLinks?: boolean;
  document?: "GENERATED" | "SIGNED";
  audit: AuditInput[];
  events?: EventEnvelope[];
}

/** Writes one transition in one batch: guarded on the envelope's version, signers on their expected status. */
async function write(ctx: ServiceContext, loaded: Loaded, change: Change): Promise<void> {
  const { envelope } = loaded;
  const db = ctx.db;
  const at = nowIso();
  const statements: Statement[] = [
    expectVersion(db, ENVELOPES, envelope.organizationId, envelope),
    db
      .update(envelopes)
      .set({ ...change.envelope, updatedAt: at, version: envelope.version + 1 })
      .where(and(eq(envelopes.id, envelope.id), eq(envelopes.version, envelope.version))),
  ];
  for (const s of change.signers ?? []) {
    const from = Array.isArray(s.from) ? s.from : [s.from];
    statements.push(db.update(envelopeSigners).set(s.set).where(and(eq(envelopeSigners.id, s.id), sql`${envelopeSigners.status} IN (SELECT value FROM json_each(${JSON.stringify(from)}))`)));
  }
  if (change.killLinks) statements.push(db.update(envelopeSigners).set({ tokenHash: null }).where(and(eq(envelopeSigners.envelopeId, envelope.id), isNotNull(envelopeSigners.tokenHash))));
  if (change.document) {
    statements.push(
      db
        .update(documents)
        .set({ status: change.document, updatedAt: at, version: sql`${documents.version} + 1` })
        .where(and(eq(documents.id, envelope.documentId), eq(documents.organizationId, envelope.organizationId))),
    );
  }
  const audit = await appendAudit(db, envelope.organizationId, envelope.id, loaded.head, change.audit);
  statements.push(...audit.statements);
  await commit(ctx, statements, change.events ?? []);
}

const entry = (event: AuditInput["event"], signerId: string | null, meta: RequestMeta, data: Record<string, unknown> | null = null): AuditInput => ({
  event,
  signerId,
  at: nowIso(),
  ip: meta.ip,
  userAgent: meta.userAgent,
  data,
});

/** Ends a non-terminal envelope (void, expiry): every link dies, the document can be sent again. */
async function end(env: Env, loaded: Loaded, status: "voided" | "expired", reason: string, meta: RequestMeta, defer: (w: Promise<unknown>) => void, actor?: ServiceContext["actor"]) {
  const data = status === "voided" ? { reason, ...(actor?.userId ? { userId: actor.userId } : {}) } : null;
  await write(machineContext(env, loaded.envelope, defer, actor), loaded, {
    envelope: { status, endedReason: reason },
    killLinks: true,
    document: "GENERATED",
    audit: [entry(status, null, meta, data)],
  });
}

const isExpired = (e: EnvelopeRow, now = nowIso()) => e.expiresAt !== null && e.expiresAt <= now;

/** The signer a live token belongs to, or null when the link is dead (signed, declined, ended, expired, unknown). */
async function liveSigner(env: Env, loaded: Loaded, tokenHash: string, defer: (w: Promise<unknown>) => void): Promise<SignerRow | null> {
  if (TERMINAL.has(loaded.envelope.status)) return null;
  if (isExpired(loaded.envelope)) {
    // The alarm has not run yet: expire now, so the link answers as an expired one.
    await end(env, loaded, "expired", "expired", { ip: null, userAgent: null }, defer);
    return null;
  }
  const signer = loaded.signers.find((s) => s.tokenHash === tokenHash);
  return signer && ACTIVE.has(signer.status) ? signer : null;
}

export type OpenResult = { kind: "active"; signer: { name: string; role: string; status: SignerStatus; documentId: string } } | { kind: "gone" };

/** GET /api/public/sign/{token}: the first open moves the signer from sent to opened and records it. */
export async function openLink(env: Env, envelopeId: string, tokenHash: string, meta: RequestMeta, defer: (w: Promise<unknown>) => void): Promise<OpenResult> {
  const loaded = await loadEnvelope(env, envelopeId);
  const signer = loaded && (await liveSigner(env, loaded, tokenHash, defer));
  if (!loaded || !signer) return { kind: "gone" };
  let status = signer.status;
  if (status === "sent") {
    await write(machineContext(env, loaded.envelope, defer), loaded, { signers: [{ id: signer.id, from: "sent", set: { status: "opened" } }], audit: [entry("opened", signer.id, meta)] });
    status = "opened";
  }
  return { kind: "active", signer: { name: signer.name, role: signer.role, status, documentId: loaded.envelope.documentId } };
}

export type ActResult = { kind: "done"; completed?: boolean } | { kind: "gone" } | { kind: "invalid_state"; message: string };

/** POST /api/public/sign/{token}: one signer action, in the order the state table allows. */
export async function act(env: Env, envelopeId: string, tokenHash: string, input: SignerAction, meta: RequestMeta, defer: (w: Promise<unknown>) => void): Promise<ActResult> {
  const loaded = await loadEnvelope(env, envelopeId);
  const signer = loaded && (await liveSigner(env, loaded, tokenHash, defer));
  if (!loaded || !signer) return { kind: "gone" };
  const ctx = machineContext(env, loaded.envelope, defer);

  if (input.action === "decline") {
    await write(ctx, loaded, {
      envelope: { status: "declined", endedReason: "declined" },
      signers: [{ id: signer.id, from: [...ACTIVE], set: { status: "declined", declinedAt: nowIso(), tokenHash: null } }],
      killLinks: true,
      document: "GENERATED",
      audit: [entry("declined", signer.id, meta, input.reason === undefined ? null : { reason: input.reason })],
    });
    return { kind: "done" };
  }

  const move = MOVES[input.action];
  if (signer.status !== move.from) {
    return { kind: "invalid_state", message: `${input.action} is not possible now: the signer is ${signer.status}, and ${input.action} follows ${move.from}` };
  }
  if (input.action === "authenticate" && input.codeVerified !== true) {
    return { kind: "invalid_state", message: "authenticate needs codeVerified: true (the one-time code or knowledge-based check was not verified)" };
  }
  if (input.action !== "sign") {
    await write(ctx, loaded, { signers: [{ id: signer.id, from: move.from, set: { status: move.to } }], audit: [entry(move.to as AuditInput["event"], signer.id, meta)] });
    return { kind: "done" };
  }

  const at = nowIso();
  const signers = loaded.signers.map((s) => (s.id === signer.id ? { ...s, status: "signed" as const, signedAt: at } : s));
  const completed = signers.every((s) => s.status === "signed");
  const change: Change = { signers: [{ id: signer.id, from: "consented", set: { status: "signed", signedAt: at, tokenHash: null } }], audit: [entry("signed", signer.id, meta)] };
  let handOff: { signer: SignerRow; token: string } | null = null;
  if (completed) {
    change.envelope = { status: "completed", completedAt: at };
    change.document = "SIGNED";
    change.events = [
      newEvent(ctx, "DOCUMENT_SIGNED", {
        envelopeId: loaded.envelope.id,
        documentId: loaded.envelope.documentId,
        completedAt: at,
        signers: signers.map((s) => ({ id: s.id, name: s.name, email: s.email, role: s.role, signedAt: s.signedAt })),
      }),
    ];
  } else if (loaded.envelope.mode === "sequential") {
    // The next signer's turn: its token is minted now and mailed once the signature is committed.
    const next = signers.find((s) => s.status === "pending");
    if (next) {
      const { token, hash } = await mintToken();
      change.signers!.push({ id: next.id, from: "pending", set: { status: "sent", tokenHash: hash, sentAt: at } });
      change.audit.push(entry("sent", next.id, meta));
      handOff = { signer: next, token };
    }
  }
  await write(ctx, loaded, change);
  if (handOff) defer(sendSigningLink(env, loaded.envelope.organizationId, handOff.signer, handOff.token));
  return { kind: "done", completed };
}

export type VoidResult = { kind: "voided" } | { kind: "not_found" } | { kind: "cannot_void"; message: string };

/** DELETE /api/signatures/{envelopeId}: any non-terminal envelope of the caller's organization. */
export async function voidEnvelope(env: Env, envelopeId: string, organizationId: string, reason: string, actorUserId: string | null, meta: RequestMeta, defer: (w: Promise<unknown>) => void): Promise<VoidResult> {
  const loaded = await loadEnvelope(env, envelopeId);
  if (!loaded || loaded.envelope.organizationId !== organizationId) return { kind: "not_found" };
  if (!TERMINAL.has(loaded.envelope.status) && isExpired(loaded.envelope)) {
    await end(env, loaded, "expired", "expired", { ip: null, userAgent: null }, defer);
    return { kind: "cannot_void", message: "The envelope has expired" };
  }
  if (TERMINAL.has(loaded.envelope.status)) return { kind: "cannot_void", message: `The envelope is already ${loaded.envelope.status}` };
  await end(env, loaded, "voided", reason, meta, defer, { type: "user", userId: actorUserId });
  return { kind: "voided" };
}

/** The alarm: expires the envelope when its time has come; answers when to look again if it has not. */
export async function expireIfDue(env: Env, envelopeId: string, defer: (w: Promise<unknown>) => void): Promise<string | null> {
  const loaded = await loadEnvelope(env, envelopeId);
  if (!loaded || TERMINAL.has(loaded.envelope.status) || !loaded.envelope.expiresAt) return null;
  if (!isExpired(loaded.envelope)) return loaded.envelope.expiresAt;
  await end(env, loaded, "expired", "expired", { ip: null, userAgent: null }, defer);
  return null;
}

/** Mails a signer their link. The raw token exists only in this message and in the creating response. */
export async function sendSigningLink(env: Env, organizationId: string, signer: Pick<SignerRow, "name" | "email" | "role">, token: string): Promise<void> {
  try {
    await mailerFor(env).send({
      organizationId,
      to: signer.email,
      subject: "A document is waiting for your signature",
      text: `Hello ${signer.name},\n\nYou are asked to review and sign a document as ${signer.role}.\nOpen this link to sign: ${signingUrl(env, token)}\n\nThe link is personal: do not forward it.`,
    });
  } catch (err) {
    console.error(JSON.stringify({ level: "error", msg: "signing link mail failed", organizationId, error: loggableError(err) }));
  }
}
