import { and, asc, count, eq, ne, notInArray, type SQL, sql } from "drizzle-orm";
import { documents, envelopeAudit, envelopes, envelopeSigners, signingLinks } from "../db/schema";
import { guard, isGuardFailure, type Statement } from "../db/write";
import { removeFiles } from "../files/storage";
import { OrganizationMoving } from "../lib/errors";
import { inJsonList, mentionsAny } from "../lib/sql";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../platform/context";
import { removePublicKeys } from "../shards/directory";
import { certificateKey } from "./certificate";
import { envelopeSigner } from "./envelope-signer";
import { TERMINAL } from "./machine";
import { sealedDocumentKey } from "./sealing";
import { envelopeFilesPrefix } from "./service";

/**
 * A person's erasure, on the signing side (issue 29). An envelope that never completed is no signed record: it is
 * voided if still open, then deleted whole (links and their directory keys, R2 files, signers, audit trail, the
 * envelope). A completed envelope is what was signed and sealed: it stays as it is, and is only counted.
 */

/** How an envelope ends without completing: the only statuses whose audit trail the 0005 trigger lets go. */
const UNSIGNED_ENDS = ["declined", "voided", "expired"] as const;
/** Envelopes one round of the step takes: each is a Durable Object call and R2 deletes before the batch. */
export const ENVELOPES_PER_ROUND = 10;
/** The reason the audit trail of an envelope voided by an erasure records (it is deleted right after). */
const VOID_REASON = "erasure of a party's personal data";
const NO_META = { ip: null, userAgent: null };

/** The organization's envelopes that name the person: a signer, the void reason, an audit entry (a decline reason), or the document's text. */
const naming = (ctx: ServiceContext, needles: string[]): SQL =>
  and(
    eq(envelopes.organizationId, ctx.organizationId),
    sql`(EXISTS (SELECT 1 FROM ${envelopeSigners} s WHERE s.envelope_id = ${envelopes.id} AND ${mentionsAny(sql`s.name || char(10) || s.email`, needles)})
         OR ${mentionsAny(sql`coalesce(${envelopes.endedReason}, '')`, needles)}
         OR EXISTS (SELECT 1 FROM ${envelopeAudit} a WHERE a.envelope_id = ${envelopes.id} AND ${mentionsAny(sql`coalesce(a.data, '')`, needles)})
         OR EXISTS (SELECT 1 FROM ${documents} d WHERE d.id = ${envelopes.documentId} AND ${mentionsAny(sql`d.canonical`, needles)}))`,
  )!;

/**
 * The live signing links of the envelopes that name the person leave the directory: from then on the public routes
 * answer 404 for them, whatever the envelope's object still holds in memory. The erasure runs this before its first
 * batch (contacts/erase.ts `begin`), so that no link shows the person once their contact is gone, however the
 * erasure stops afterwards. Live links belong to open envelopes only (an envelope's end kills them).
 */
export async function closeSigningLinks(ctx: ServiceContext, needles: string[]): Promise<void> {
  await removeLinkKeys(ctx, sql`${signingLinks.envelopeId} IN (SELECT ${envelopes.id} FROM ${envelopes} WHERE ${naming(ctx, needles)})`);
}

/** Takes the directory keys of the organization's live links of the envelopes `which` names out of the directory. */
async function removeLinkKeys(ctx: ServiceContext, which: SQL): Promise<void> {
  const links = await ctx.db.select({ tokenHash: signingLinks.tokenHash }).from(signingLinks).where(and(eq(signingLinks.organizationId, ctx.organizationId), which));
  await removePublicKeys(
    ctx.directory,
    ctx.organizationId,
    "signing_link",
    links.map((l) => l.tokenHash),
  );
}

/**
 * Deletes every envelope of the organization that names the person and never completed, ENVELOPES_PER_ROUND at a
 * time, each round in this order (so that a failure at any point leaves the rest findable by the next run):
 * 1. the live links' keys leave the directory (the public routes answer 404 from then on; `closeSigningLinks` did so
 *    before `begin` already, this catches a link minted since);
 * 2. the envelope's Durable Object voids the open ones (its alarm and cached state end there);
 * 3. the R2 files go (the PDF the signers read, and any certificate or sealed copy);
 * 4. one D1 batch marks them `erasing_at` and deletes audit trail, links, signers and envelopes, with the count.
 * `counted()` adds the rows the statement before it deleted to the erasure's count.
 */
export async function eraseUnsignedEnvelopes(ctx: ServiceContext, needles: string[], counted: () => Statement): Promise<void> {
  const org = ctx.organizationId;
  for (let lost = 0; ; ) {
    const round = await ctx.db
      .select({ id: envelopes.id, status: envelopes.status })
      .from(envelopes)
      .where(and(naming(ctx, needles), ne(envelopes.status, "completed")))
      .orderBy(asc(envelopes.id))
      .limit(ENVELOPES_PER_ROUND);
    if (round.length === 0) return;
    const open = round.filter((e) => !TERMINAL.has(e.status)).map((e) => e.id);
    if (open.length > 0) {
      // closeSigningLinks ran before `begin`; a link minted since (a resend) goes here.
      await removeLinkKeys(ctx, inJsonList(signingLinks.envelopeId, open));
      for (const id of open) {
        const result = await envelopeSigner(ctx.env, id).void(id, org, VOID_REASON, ctx.actor.userId ?? null, NO_META);
        if (result.kind === "moving") throw new OrganizationMoving();
      }
    }
    // Ended statuses are final: what reads as declined, voided or expired now can no longer complete.
    const now = open.length > 0 ? await ctx.db.select({ id: envelopes.id, status: envelopes.status }).from(envelopes).where(and(eq(envelopes.organizationId, org), inJsonList(envelopes.id, round.map((e) => e.id)))) : round;
    if (now.some((e) => !TERMINAL.has(e.status))) throw new Error("An open envelope naming the person could not be voided; the next run of the erasure tries again");
    const ended = now.filter((e) => (UNSIGNED_ENDS as readonly string[]).includes(e.status)).map((e) => e.id);
    if (ended.length === 0) continue;
    await removeFiles(ctx.env, ended.flatMap((id) => [certificateKey(org, id), sealedDocumentKey(org, id)]));
    for (const id of ended) await removeFiles(ctx.env, [], envelopeFilesPrefix(org, id));
    try {
      await ctx.db.batch(deleteEnvelopes(ctx, ended, counted));
    } catch (err) {
      // A guard that failed means one of them is no longer an ended, uncompleted envelope: read the round again.
      if (!isGuardFailure(err) || ++lost >= 3) throw err;
    }
  }
}

/** The batch that deletes ended, uncompleted envelopes whole: the mark first, which alone lets the audit rows go. */
function deleteEnvelopes(ctx: ServiceContext, ids: string[], counted: () => Statement): [Statement, ...Statement[]] {
  const org = ctx.organizationId;
  const those = inJsonList(envelopes.id, ids);
  return [
    guard(ctx.db, sql`NOT EXISTS (SELECT 1 FROM ${envelopes} WHERE ${and(eq(envelopes.organizationId, org), those, notInArray(envelopes.status, [...UNSIGNED_ENDS]))})`),
    ctx.db.update(envelopes).set({ erasingAt: nowIso() }).where(and(eq(envelopes.organizationId, org), those)),
    ctx.db.delete(envelopeAudit).where(and(eq(envelopeAudit.organizationId, org), inJsonList(envelopeAudit.envelopeId, ids))),
    ctx.db.delete(signingLinks).where(and(eq(signingLinks.organizationId, org), inJsonList(signingLinks.envelopeId, ids))),
    ctx.db.delete(envelopeSigners).where(and(eq(envelopeSigners.organizationId, org), inJsonList(envelopeSigners.envelopeId, ids))),
    ctx.db.delete(envelopes).where(and(eq(envelopes.organizationId, org), those)),
    counted(),
  ];
}

/** Completed envelopes that name the person: kept as signed, and named in the erasure's answer. */
export async function countSignedEnvelopes(ctx: ServiceContext, needles: string[]): Promise<number> {
  const [row] = await ctx.db
    .select({ n: count() })
    .from(envelopes)
    .where(and(naming(ctx, needles), eq(envelopes.status, "completed")));
  return row?.n ?? 0;
}
