import { and, eq } from "drizzle-orm";
import { readsForWrite } from "../crm/write-reads";
import { deals } from "../db/schema";
import type { DealRecord } from "./mapping";

// Apart from service.ts so that the app (which hands these to authentication) loads no more of the domain at startup.

/** A write of one deal starts from its row; PUT reads it with the authentication. */
export const dealWriteReads = readsForWrite<[DealRecord[]]>("Deal", "/v1/deals", (db, organizationId, id) => [
  db
    .select()
    .from(deals)
    .where(and(eq(deals.id, id), eq(deals.organizationId, organizationId))),
]);

export const dealPreloads = dealWriteReads.preloads;
