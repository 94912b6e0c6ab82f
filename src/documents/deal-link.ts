import { and, eq } from "drizzle-orm";
import { deals } from "../db/schema";
import { expectRow, type Statement } from "../db/write";
import { findDeal } from "../deals/service";
import { NotFound, Validation } from "../lib/errors";
import type { ServiceContext } from "../service-context";

/** The deal a new document links to must be one of the caller's organization: otherwise a 400 naming `dealId`. */
export async function linkedDeal(ctx: ServiceContext, dealId: string | null | undefined): Promise<Statement[]> {
  if (dealId === undefined || dealId === null) return [];
  await findDeal(ctx, dealId).catch((err: unknown) => {
    throw err instanceof NotFound
      ? new Validation([
          { field: "dealId", path: ["dealId"], code: "invalid_reference", message: "No deal with this id in your organization" },
        ])
      : err;
  });
  // Still there when the batch runs (a delete in between aborts it, and the retry answers 400).
  return [expectRow(ctx.db, deals, and(eq(deals.organizationId, ctx.organizationId), eq(deals.id, dealId)))];
}
