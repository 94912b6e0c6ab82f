import { and, eq, inArray } from "drizzle-orm";
import { organizationExports } from "../db/schema";
import type { Statement } from "../db/write";
import type { ServiceContext } from "../service-context";

/** Where an organization's export zips live in R2 (`exports/<organizationId>/<exportId>.zip`): the export job writes them. */
export const exportArchiveKey = (organizationId: string, exportId: string) => `exports/${organizationId}/${exportId}.zip`;
export const exportArchivesPrefix = (organizationId: string) => `exports/${organizationId}/`;

/**
 * Deletes every export zip of the organization and kills their links (a person's erasure: a zip made before
 * it holds them, so none survives it). A job still running is failed first, so it cannot complete a zip after this:
 * it checks the row is still `running` before it completes and deletes its zip otherwise (exports/service.ts).
 * `counted()` adds the export rows ended to the erasure's count. Answers how many zips went from R2.
 */
export async function deleteExportArchives(ctx: ServiceContext, counted: () => Statement): Promise<number> {
  const org = ctx.organizationId;
  const at = new Date().toISOString();
  const live = and(eq(organizationExports.organizationId, org), inArray(organizationExports.status, ["queued", "running", "completed"]));
  // Counted only when there is something to end: an erasure's counts name what it touched.
  if (await ctx.db.select({ id: organizationExports.id }).from(organizationExports).where(live).limit(1).get()) {
    await ctx.db.batch([
      ctx.db
        .update(organizationExports)
        .set({
          status: "deleted",
          tokenHash: null,
          objectKey: null,
          expiresAt: null,
          leaseUntil: null,
          error: "Deleted: a person's data was erased after this export was made",
          updatedAt: at,
        })
        .where(live),
      counted(),
    ]);
  }
  let deleted = 0;
  let cursor: string | undefined;
  do {
    const page = await ctx.files.list({ prefix: exportArchivesPrefix(org), cursor });
    if (page.objects.length > 0) await ctx.files.delete(page.objects.map((o) => o.key));
    deleted += page.objects.length;
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return deleted;
}
