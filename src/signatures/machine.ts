import { and, desc, eq, inArray, sql } from "drizzle-orm";
import { documents, envelopeAudit, envelopes, envelopeSigners, signingLinks } from "../db/schema";
import type { ChainSeal, EnvelopeStatus, LinkVia, SignerStatus } from "../db/signatures";
import { expectVersion, type Statement, type VersionedTable } from "../db/write";
import { commit } from "../events/commit";
import type { Env } from "../env";
import type { DomainEvent } from "../events/event";
import { createLogger, type Logger, loggableError } from "../lib/log";
import { nowIso } from "../lib/time";
import { portsOf, type RequestMeta, type ServiceContext } from "../service-context";
import { registerPublicKeys } from "../shards/directory";
import { type AuditInput, appendAudit, type ChainHead, GENESIS } from "./audit";
import { sealChainHead } from "./chain-seal";
import { envelopeEvent } from "./present";

/**
 * The envelope state machine's storage half (spec: States and transitions). Every transition runs inside the
 * envelope's EnvelopeSigner Durable Object, one at a time (envelope-signer.ts), from the state the object holds;
 * each write is one D1 batch, a compare-and-set on the envelope's version, so a state the object holds that D1 has
 * moved past fails the batch (StaleWrite) instead of overwriting it, and the object reloads.
 */
export type EnvelopeRow = typeof envelopes.$inferSelect;
export type SignerRow = typeof envelopeSigners.$inferSelect;

export interface LiveLink {
  tokenHash: string;
  signerId: string;
  /** How a new link reaches its holder (signing_links.via; mailed unless said): an embedded view or a host session opened it (issue 45). */
  via?: LinkVia;
}

/** The envelope's organization's shard, and the directory its new link keys are registered in. */
export type Tenant = Pick<ServiceContext, "db" | "d1" | "directory">;

export interface Loaded {
  envelope: EnvelopeRow;
  signers: SignerRow[];
  links: LiveLink[];
  head: ChainHead;
  tenant: Tenant;
}

export const ENVELOPES: VersionedTable = {
  table: envelopes,
  id: envelopes.id,
  organizationId: envelopes.organizationId,
  version: envelopes.version,
};
export const TERMINAL: ReadonlySet<EnvelopeStatus> = new Set(["completed", "declined", "voided", "expired"]);
export const ACTIVE: ReadonlySet<SignerStatus> = new Set(["sent", "opened", "authenticated", "consented"]);
const NO_META: RequestMeta = { ip: null, userAgent: null };

/** The envelope, its signers in signing order, its live links and its audit chain head, in one round trip to its shard. */
export async function loadEnvelope(tenant: Tenant, envelopeId: string): Promise<Loaded | null> {
  const db = tenant.db;
  const [rows, signers, links, last] = await db.batch([
    db.select().from(envelopes).where(eq(envelopes.id, envelopeId)),
    db.select().from(envelopeSigners).where(eq(envelopeSigners.envelopeId, envelopeId)).orderBy(envelopeSigners.position),
    db
      .select({ tokenHash: signingLinks.tokenHash, signerId: signingLinks.signerId })
      .from(signingLinks)
      .where(eq(signingLinks.envelopeId, envelopeId)),
    db
      .select({ seq: envelopeAudit.seq, hash: envelopeAudit.hash })
      .from(envelopeAudit)
      .where(eq(envelopeAudit.envelopeId, envelopeId))
      .orderBy(desc(envelopeAudit.seq))
      .limit(1),
  ]);
  const envelope = rows[0];
  return envelope ? { envelope, signers, links, head: last[0] ?? { seq: 0, hash: GENESIS }, tenant } : null;
}

/** The service context a transition writes with: the envelope's organization and shard, deferred work kept alive. */
export function machineContext(
  env: Env,
  loaded: Loaded,
  defer: (work: Promise<unknown>) => void,
  actor: ServiceContext["actor"] = { type: "public", userId: null },
): ServiceContext {
  const { db, d1, directory } = loaded.tenant;
  const organizationId = loaded.envelope.organizationId;
  const requestId = "envelope-signer";
  return {
    env,
    ...portsOf(env),
    log: createLogger({ requestId, organizationId }),
    db,
    directory,
    d1,
    organizationId,
    actor,
    requestId,
    defer,
  };
}

export type SignerSet = Partial<Pick<SignerRow, "status" | "sentAt" | "signedAt" | "declinedAt" | "verification" | "remindAt">>;

export interface Change {
  envelope?: Partial<Pick<EnvelopeRow, "status" | "completedAt" | "endedReason" | "expiryNoticeAt">>;
  signers?: { id: string; from: SignerStatus | SignerStatus[]; set: SignerSet }[];
  /** Every live link of the envelope dies, and no signer is reminded any more (a terminal state). */
  killLinks?: boolean;
  /** These signers' links die (they signed). */
  killSignerLinks?: string[];
  newLinks?: LiveLink[];
  document?: "GENERATED" | "SIGNED";
  audit: AuditInput[];
  /** The events of the transition, made from the state it leaves (they carry the envelope as it reads after it). */
  events?: (after: Pick<Loaded, "envelope" | "signers">) => DomainEvent[];
}

/**
 * Writes one transition in one batch, guarded on the envelope's version (signers on their expected status too), and
 * answers the state after it. A terminal status signs the audit chain's new head with the seal key (chain-seal.ts).
 */
export async function write(ctx: ServiceContext, loaded: Loaded, change: Change): Promise<Loaded> {
  const { envelope } = loaded;
  const db = ctx.db;
  const at = nowIso();
  const audit = await appendAudit(db, envelope.organizationId, envelope.id, loaded.head, change.audit);
  const terminal = change.envelope?.status !== undefined && TERMINAL.has(change.envelope.status);
  const chainSeal: ChainSeal | null = terminal
    ? await sealChainHead(ctx.env, envelope.id, audit.head).catch(noSeal(ctx.log, envelope.id))
    : envelope.chainSeal;
  const next: EnvelopeRow = { ...envelope, ...change.envelope, chainSeal, updatedAt: at, version: envelope.version + 1 };
  const statements: Statement[] = [
    expectVersion(db, ENVELOPES, envelope.organizationId, envelope),
    db
      .update(envelopes)
      .set({ ...change.envelope, ...(terminal ? { chainSeal } : {}), updatedAt: at, version: next.version })
      .where(and(eq(envelopes.id, envelope.id), eq(envelopes.version, envelope.version))),
  ];
  for (const s of change.signers ?? []) {
    const from = Array.isArray(s.from) ? s.from : [s.from];
    statements.push(
      db
        .update(envelopeSigners)
        .set(s.set)
        .where(and(eq(envelopeSigners.id, s.id), sql`${envelopeSigners.status} IN (SELECT value FROM json_each(${JSON.stringify(from)}))`)),
    );
  }
  if (change.killLinks) {
    statements.push(db.delete(signingLinks).where(eq(signingLinks.envelopeId, envelope.id)));
    statements.push(db.update(envelopeSigners).set({ remindAt: null }).where(eq(envelopeSigners.envelopeId, envelope.id)));
  } else if (change.killSignerLinks?.length) {
    statements.push(
      db.delete(signingLinks).where(and(eq(signingLinks.envelopeId, envelope.id), inArray(signingLinks.signerId, change.killSignerLinks))),
    );
  }
  for (const l of change.newLinks ?? [])
    statements.push(
      db.insert(signingLinks).values({ ...l, envelopeId: envelope.id, organizationId: envelope.organizationId, createdAt: at }),
    );
  if (change.document) {
    statements.push(
      db
        .update(documents)
        .set({ status: change.document, updatedAt: at, version: sql`${documents.version} + 1` })
        .where(and(eq(documents.id, envelope.documentId), eq(documents.organizationId, envelope.organizationId))),
    );
  }
  statements.push(...audit.statements);
  // New links are registered in the directory before the shard write that makes them live: a key whose
  // write then fails resolves to an envelope without that link, which answers as an unknown token.
  await registerPublicKeys(
    ctx.directory,
    envelope.organizationId,
    "signing_link",
    (change.newLinks ?? []).map((l) => l.tokenHash),
  );
  const sets = new Map((change.signers ?? []).map((s) => [s.id, s.set]));
  const signers = loaded.signers.map((s) => ({ ...s, ...sets.get(s.id), ...(change.killLinks ? { remindAt: null } : {}) }));
  // In the transition's own batch: a write that loses its compare-and-set stages nothing, so each transition emits once.
  await commit(ctx, statements, change.events?.({ envelope: next, signers }) ?? []);

  const dead = new Set(change.killSignerLinks ?? []);
  return {
    envelope: next,
    signers,
    links: change.killLinks ? [] : [...loaded.links.filter((l) => !dead.has(l.signerId)), ...(change.newLinks ?? [])],
    head: audit.head,
    tenant: loaded.tenant,
  };
}

/** Without a seal key the terminal state still lands (a signature never fails on configuration); the log says why. */
const noSeal = (log: Logger, envelopeId: string) => (err: unknown) => {
  log.error("audit chain head not sealed", { envelopeId, error: loggableError(err) });
  return null;
};

export const entry = (
  event: AuditInput["event"],
  signerId: string | null,
  meta: RequestMeta,
  data: Record<string, unknown> | null = null,
): AuditInput => ({
  event,
  signerId,
  at: nowIso(),
  ip: meta.ip,
  userAgent: meta.userAgent,
  data,
});

/** Ends a non-terminal envelope (void, expiry): every link dies, the document can be sent again. */
export async function end(
  ctx: ServiceContext,
  loaded: Loaded,
  status: "voided" | "expired",
  reason: string,
  meta: RequestMeta,
): Promise<Loaded> {
  const data = status === "voided" ? { reason, ...(ctx.actor.userId ? { userId: ctx.actor.userId } : {}) } : null;
  return write(ctx, loaded, {
    envelope: { status, endedReason: reason },
    killLinks: true,
    document: "GENERATED",
    audit: [entry(status, null, meta, data)],
    events: (after) => [envelopeEvent(ctx, status === "voided" ? "envelope.voided" : "envelope.expired", after, loaded)],
  });
}

export const isExpired = (e: Pick<EnvelopeRow, "expiresAt">, now = nowIso()) => e.expiresAt !== null && e.expiresAt <= now;

/**
 * The signer a live token belongs to, or null when the link is dead (signed, declined, ended, expired, unknown). An
 * envelope past its expiry whose alarm has not run yet is expired now, so the link answers as an expired one.
 */
export async function liveSigner(
  env: Env,
  loaded: Loaded,
  tokenHash: string,
  defer: (w: Promise<unknown>) => void,
): Promise<{ signer: SignerRow | null; state: Loaded; waiting?: true }> {
  if (TERMINAL.has(loaded.envelope.status)) return { signer: null, state: loaded };
  if (isExpired(loaded.envelope))
    return { signer: null, state: await end(machineContext(env, loaded, defer), loaded, "expired", "expired", NO_META) };
  const link = loaded.links.find((l) => l.tokenHash === tokenHash);
  const signer = link && loaded.signers.find((s) => s.id === link.signerId);
  // A recipient of an uploaded document holds a link from the start; until their order's turn it is not theirs to use.
  if (signer?.status === "pending") return { signer: null, state: loaded, waiting: true };
  return { signer: signer && ACTIVE.has(signer.status) ? signer : null, state: loaded };
}

/** A recipient who has done what was asked of them: signed, approved, or (a viewer) seen the document. */
export const DONE: ReadonlySet<SignerStatus> = new Set(["signed", "approved", "viewed"]);

/** The alarm: expires the envelope when its time has come; answers when to look again if it has not. */
export async function expireIfDue(
  env: Env,
  loaded: Loaded,
  defer: (w: Promise<unknown>) => void,
  now = new Date(),
): Promise<{ later: string | null; state: Loaded }> {
  if (TERMINAL.has(loaded.envelope.status) || !loaded.envelope.expiresAt) return { later: null, state: loaded };
  if (!isExpired(loaded.envelope, nowIso(now))) return { later: loaded.envelope.expiresAt, state: loaded };
  return { later: null, state: await end(machineContext(env, loaded, defer), loaded, "expired", "expired", NO_META) };
}
