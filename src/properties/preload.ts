import { and, eq } from "drizzle-orm";
import { readsForWrite } from "../crm/write-reads";
import { properties } from "../db/schema";
import type { PropertyRecord } from "./mapping";

// Apart from service.ts so that the app (which hands these to authentication) loads no more of the domain at startup.

/** A write of one property starts from its row; PUT reads it with the authentication. */
export const propertyWriteReads = readsForWrite<[PropertyRecord[]]>("Property", "/v1/properties", (db, organizationId, id) => [
  db
    .select()
    .from(properties)
    .where(and(eq(properties.id, id), eq(properties.organizationId, organizationId))),
]);

export const propertyPreloads = propertyWriteReads.preloads;
