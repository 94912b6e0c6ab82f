import { and, asc, eq, gt, ne, notInArray, type SQL, sql } from "drizzle-orm";
import { documents, envelopeAudit, envelopes, envelopeSigners, signingLinks } from "../db/schema";
import type { EnvelopeStatus } from "../db/signatures";
import { guard, isGuardFailure, type Statement } from "../db/write";
import { envelopeFilesPrefix } from "../files/keys";
import { removeFiles } from "../files/storage";
import { OrganizationMoving } from "../lib/errors";
import { type Erasable, scrubOf } from "../crm/erasure";
import type { Needles, Recognizer } from "../lib/mentions";
import { inJsonList, mentionsAny } from "../lib/sql";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { removePublicKeys } from "../shards/directory";
import { certificateKey } from "./certificate";
import { envelopeSigner } from "./signer-client";
import { TERMINAL } from "./machine";
import { sealedDocumentKey } from "./sealing";

/**
 * A person's erasure, on the signing side. An envelope that never completed is no signed record: when it
 * names the person by their e-mail or phone it is voided if still open, then deleted whole (links and their
 * directory keys, R2 files, signers, audit trail, the envelope). One that names a name alone is kept and counted: a
 * name may be another person's (a namesake's lease is theirs). A completed envelope is what was signed and sealed:
 * it stays as it is, and is only counted.
 */

/** How an envelope ends without completing: the only statuses whose audit trail the 0005 trigger lets go. */
const UNSIGNED_ENDS = ["declined", "voided", "expired"] as const;
/** Envelopes one round of the step takes: each is a Durable Object call and R2 deletes before the batch. */
export const ENVELOPES_PER_ROUND = 10;
/** The reason the audit trail of an envelope voided by an erasure records (it is deleted right after). */
const VOID_REASON = "erasure of a party's personal data";
const NO_META = { ip: null, userAgent: null };

/** The organization's envelopes that may name the person (the SQL filter): a signer, the reason it ended, an audit entry (a decline reason), or the document's text. */
const naming = (ctx: ServiceContext, needles: Needles): SQL =>
  and(
    eq(envelopes.organizationId, ctx.organizationId),
    sql`(EXISTS (SELECT 1 FROM ${envelopeSigners} s WHERE s.envelope_id = ${envelopes.id} AND ${mentionsAny(sql`s.name || char(10) || s.email`, needles)})
         OR ${mentionsAny(sql`coalesce(${envelopes.endedReason}, '')`, needles)}
         OR EXISTS (SELECT 1 FROM ${envelopeAudit} a WHERE a.envelope_id = ${envelopes.id} AND ${mentionsAny(sql`coalesce(a.data, '')`, needles)})
         OR EXISTS (SELECT 1 FROM ${documents} d WHERE d.id = ${envelopes.documentId} AND ${mentionsAny(sql`d.canonical`, needles)}))`,
  )!;

/**
 * Those same texts of an envelope as one JSON array, for the precise test in JS (lib/mentions.ts walks the JSON
 * inside). The envelope's columns are named with their table: in a select field drizzle writes a column bare, which
 * inside these subqueries would name the subquery's own table.
 */
const textsOf = sql<string>`json_array(
  (SELECT json_group_array(json_array(s.name, s.email)) FROM ${envelopeSigners} s WHERE s.envelope_id = "envelopes"."id"),
  "envelopes"."ended_reason",
  (SELECT json_group_array(a.data) FROM ${envelopeAudit} a WHERE a.envelope_id = "envelopes"."id"),
  (SELECT d.canonical FROM ${documents} d WHERE d.id = "envelopes"."document_id"))`;

/** The candidates of one round, in id order after `after`: their status and texts. */
const candidates = (ctx: ServiceContext, who: Recognizer, status: SQL, after: string, limit: number) =>
  ctx.db
    .select({ id: envelopes.id, status: envelopes.status, texts: textsOf })
    .from(envelopes)
    .where(and(naming(ctx, who.needles), status, gt(envelopes.id, after)))
    .orderBy(asc(envelopes.id))
    .limit(limit);

/**
 * The live signing links of the open envelopes the erasure will delete (those that name the person by their e-mail or
 * phone) leave the directory: from then on the public routes answer 404 for them, whatever the envelope's object
 * still holds in memory. The erasure runs this before its first batch (erasure/erase.ts `begin`), so that no link
 * shows the person once their contact is gone, however the erasure stops afterwards. A link of an envelope that names
 * a name alone is left alone (it may be a namesake's); live links belong to open envelopes only.
 */
export async function closeSigningLinks(ctx: ServiceContext, who: Recognizer): Promise<void> {
  for (let after = ""; ; ) {
    const found = await candidates(ctx, who, notInArray(envelopes.status, [...TERMINAL]), after, CLOSE_PAGE);
    await removeLinkKeys(
      ctx,
      found.filter((e) => who.identifies(e.texts)).map((e) => e.id),
    );
    if (found.length < CLOSE_PAGE) return;
    after = found[found.length - 1]!.id;
  }
}

/** Open envelopes read per page while their links are closed (a read each; no object call). */
const CLOSE_PAGE = 100;

/** Takes the directory keys of the organization's live links of `envelopeIds` out of the directory. */
async function removeLinkKeys(ctx: ServiceContext, envelopeIds: string[]): Promise<void> {
  if (envelopeIds.length === 0) return;
  const links = await ctx.db
    .select({ tokenHash: signingLinks.tokenHash })
    .from(signingLinks)
    .where(and(eq(signingLinks.organizationId, ctx.organizationId), inJsonList(signingLinks.envelopeId, envelopeIds)));
  await removePublicKeys(
    ctx.directory,
    ctx.organizationId,
    "signing_link",
    links.map((l) => l.tokenHash),
  );
}

/**
 * Deletes every envelope of the organization that never completed and names the person by their e-mail or phone (a
 * signer's address, the document, the reason, an audit entry) — never by a name alone, which may be another
 * person's. ENVELOPES_PER_ROUND at a time, each round in this order (so that a failure at any point leaves the rest
 * findable by the next run):
 * 1. the live links' keys leave the directory (the public routes answer 404 from then on; `closeSigningLinks` did so
 *    before `begin` already, this catches a link minted since, by a resend);
 * 2. the envelope's Durable Object voids the open ones (its alarm and cached state end there);
 * 3. the R2 files go (the PDF the signers read, and any certificate or sealed copy);
 * 4. one D1 batch marks them `erasing_at` and deletes audit trail, links, signers and envelopes, with the count.
 * `counted()` adds the rows the statement before it deleted to the erasure's count. Answers how many uncompleted
 * envelopes it kept that name the person's name alone.
 */
export async function eraseUnsignedEnvelopes(ctx: ServiceContext, who: Recognizer, counted: () => Statement): Promise<number> {
  let byName = 0;
  for (let after = "", lost = 0; ; ) {
    const found = await candidates(ctx, who, ne(envelopes.status, "completed"), after, ENVELOPES_PER_ROUND);
    const theirs = found.filter((e) => who.identifies(e.texts));
    if (theirs.length > 0) {
      try {
        await eraseRound(ctx, theirs, counted);
      } catch (err) {
        // A guard that failed means one of them is no longer an ended, uncompleted envelope: read the round again.
        if (!isGuardFailure(err) || ++lost >= 3) throw err;
        continue;
      }
    }
    byName += found.filter((e) => !who.identifies(e.texts) && who.names(e.texts)).length;
    if (found.length < ENVELOPES_PER_ROUND) return byName;
    after = found[found.length - 1]!.id;
  }
}

async function eraseRound(ctx: ServiceContext, round: { id: string; status: EnvelopeStatus }[], counted: () => Statement): Promise<void> {
  const org = ctx.organizationId;
  const open = round.filter((e) => !TERMINAL.has(e.status)).map((e) => e.id);
  if (open.length > 0) {
    await removeLinkKeys(ctx, open);
    for (const id of open) {
      const result = await envelopeSigner(ctx.env, id).void(id, org, VOID_REASON, ctx.actor.userId ?? null, NO_META);
      if (result.kind === "moving") throw new OrganizationMoving();
    }
  }
  // Ended statuses are final: what reads as declined, voided or expired now can no longer complete.
  const now =
    open.length > 0
      ? await ctx.db
          .select({ id: envelopes.id, status: envelopes.status })
          .from(envelopes)
          .where(
            and(
              eq(envelopes.organizationId, org),
              inJsonList(
                envelopes.id,
                round.map((e) => e.id),
              ),
            ),
          )
      : round;
  if (now.some((e) => !TERMINAL.has(e.status)))
    throw new Error("An open envelope naming the person could not be voided; the next run of the erasure tries again");
  const ended = now.filter((e) => (UNSIGNED_ENDS as readonly string[]).includes(e.status)).map((e) => e.id);
  if (ended.length === 0) return;
  await removeFiles(
    ctx.files,
    ended.flatMap((id) => [certificateKey(org, id), sealedDocumentKey(org, id)]),
  );
  for (const id of ended) await removeFiles(ctx.files, [], envelopeFilesPrefix(org, id));
  await ctx.db.batch(deleteEnvelopes(ctx, ended, counted));
}

/** The batch that deletes ended, uncompleted envelopes whole: the mark first, which alone lets the audit rows go. */
function deleteEnvelopes(ctx: ServiceContext, ids: string[], counted: () => Statement): [Statement, ...Statement[]] {
  const org = ctx.organizationId;
  const those = inJsonList(envelopes.id, ids);
  return [
    guard(
      ctx.db,
      sql`NOT EXISTS (SELECT 1 FROM ${envelopes} WHERE ${and(eq(envelopes.organizationId, org), those, notInArray(envelopes.status, [...UNSIGNED_ENDS]))})`,
    ),
    ctx.db
      .update(envelopes)
      .set({ erasingAt: nowIso() })
      .where(and(eq(envelopes.organizationId, org), those)),
    ctx.db.delete(envelopeAudit).where(and(eq(envelopeAudit.organizationId, org), inJsonList(envelopeAudit.envelopeId, ids))),
    ctx.db.delete(signingLinks).where(and(eq(signingLinks.organizationId, org), inJsonList(signingLinks.envelopeId, ids))),
    ctx.db.delete(envelopeSigners).where(and(eq(envelopeSigners.organizationId, org), inJsonList(envelopeSigners.envelopeId, ids))),
    ctx.db.delete(envelopes).where(and(eq(envelopes.organizationId, org), those)),
    counted(),
  ];
}

/** Envelopes (of `status`, or any) that are the person's: naming them by e-mail or phone, or by a name that is theirs alone. */
export async function envelopesNaming(
  ctx: ServiceContext,
  who: Recognizer,
  status?: EnvelopeStatus,
): Promise<{ id: string; status: EnvelopeStatus }[]> {
  const theirs: { id: string; status: EnvelopeStatus }[] = [];
  for (let after = ""; ; ) {
    const found = await candidates(ctx, who, status ? eq(envelopes.status, status) : sql`1`, after, ENVELOPES_PER_ROUND);
    theirs.push(
      ...found.filter((e) => who.identifies(e.texts) || (who.nameIsTheirs && who.names(e.texts))).map(({ id, status }) => ({ id, status })),
    );
    if (found.length < ENVELOPES_PER_ROUND) return theirs;
    after = found[found.length - 1]!.id;
  }
}

/** Completed envelopes that name the person: kept as signed, and named in the erasure's answer. */
export const countSignedEnvelopes = async (ctx: ServiceContext, who: Recognizer): Promise<number> =>
  (await envelopesNaming(ctx, who, "completed")).length;

/** The signatures' share of a person's erasure (crm/erasure.ts, erasure/erase.ts). */
export const signaturesErasable: Erasable = {
  // Their signing links stop first: from the moment `begin` commits, neither the contact nor a link shows them.
  begin: (ctx, { person }) => ({
    async write() {
      await closeSigningLinks(ctx, scrubOf(person, false).recognizer);
      return {};
    },
  }),
  async erase(ctx, scrub, counted) {
    const who = scrub.recognizer;
    const documentsByName = await eraseUnsignedEnvelopes(ctx, who, () => counted("envelopes"));
    return { documents_by_name: documentsByName, signed_envelopes: await countSignedEnvelopes(ctx, who) };
  },
};
