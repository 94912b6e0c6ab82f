import { and, asc, eq, ne, sql } from "drizzle-orm";
import { COPY_PAGE, type Copy, keepsName, MAX_REWRITE_CHARS, redactJson, rewriteCopies, rewriteItem, rewriteList } from "../crm/copies";
import type { Counted, Erasable, Scrub } from "../crm/erasure";
import { trashEntries, trashRows } from "../db/schema";
import { chunkBySize, mentionsAny } from "../lib/sql";
import type { ServiceContext } from "../service-context";

// The trash's share of a person's erasure (crm/erasure.ts, erasure/erase.ts): what other records kept in the trash
// say of them. Their own contact's entry went in `begin` (contacts/erasure.ts).

const COPIES: Copy[] = [{ kind: "trash_labels", table: trashEntries, key: "recordId", column: "label" }];

/**
 * The kept rows of other records in the trash (each the JSON of a row, crm/trash.ts) that name the person,
 * redacted structurally like any copy, after the domain of the row's table rewrote it (`scrub.trashedRows`: a
 * trashed contact loses the tags that name them, as the live ones do): a restore writes back what is kept, so it
 * brings back no name. Walked in key order on the organization's index (`trash_rows_org_idx`). Answers how many kept
 * rows still name the name (another contact has it).
 */
async function scrubTrash(ctx: ServiceContext, scrub: Scrub, counted: Counted): Promise<number> {
  let byName = 0;
  for (let after: [string, number] | null = null; ; ) {
    const rows: { recordId: string; seq: number; tableName: string; row: string }[] = await ctx.db
      .select({ recordId: trashRows.recordId, seq: trashRows.seq, tableName: trashRows.tableName, row: trashRows.row })
      .from(trashRows)
      .where(
        and(
          eq(trashRows.organizationId, ctx.organizationId),
          ne(trashRows.recordId, scrub.person.id),
          after ? sql`(${trashRows.recordId}, ${trashRows.seq}) > (${after[0]}, ${after[1]})` : undefined,
          mentionsAny(trashRows.row, scrub.recognizer.needles),
        ),
      )
      .orderBy(asc(trashRows.recordId), asc(trashRows.seq))
      .limit(COPY_PAGE);
    const rewrites = rows.flatMap((r) => {
      const own = scrub.trashedRows.get(r.tableName);
      const next = redactJson(own ? own(r.row, scrub) : r.row, scrub);
      if (keepsName(scrub, next)) byName++;
      return next === r.row ? [] : [JSON.stringify([r.recordId, r.seq, r.row, next])];
    });
    for (const chunk of chunkBySize(rewrites, MAX_REWRITE_CHARS)) {
      await ctx.db.batch([
        ctx.db
          .update(trashRows)
          .set({ row: rewriteItem(3) })
          .from(rewriteList(chunk))
          .where(and(eq(trashRows.recordId, rewriteItem(0)), eq(trashRows.seq, rewriteItem(1)), eq(trashRows.row, rewriteItem(2)))),
        counted("trash_rows"),
      ]);
    }
    if (rows.length < COPY_PAGE) break;
    const last = rows[rows.length - 1]!;
    after = [last.recordId, last.seq];
  }
  return byName;
}

export const trashErasable: Erasable = {
  async erase(ctx, scrub, counted) {
    return { name_mentions: (await scrubTrash(ctx, scrub, counted)) + (await rewriteCopies(ctx, scrub, counted, COPIES)) };
  },
};
