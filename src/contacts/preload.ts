import { and, eq, type SQL, sql } from "drizzle-orm";
import { readsForWrite } from "../crm/write-reads";
import type { Db } from "../db/client";
import { contactActivities, contacts } from "../db/schema";
import { idsOf, inJsonList } from "../lib/sql";
import { CONVERSATION_TYPES } from "./lead-score";
import type { ContactRecord } from "./mapping";

// Apart from writes.ts so that the app (which hands these to authentication) loads no more of the domain at startup.

/** Activity figures that feed the lead score, for several contacts in one query. */
const activityFiguresQuery = (db: Db, organizationId: string | SQL, contactIds: string[]) =>
  db
    .select({
      contactId: contactActivities.contactId,
      count: sql<number>`COUNT(*)`,
      conversations: sql<number>`SUM(CASE WHEN ${contactActivities.type} IN (${sql.join(
        CONVERSATION_TYPES.map((t) => sql`${t}`),
        sql`, `,
      )}) THEN 1 ELSE 0 END)`,
      lastActivityAt: sql<string | null>`MAX(${contactActivities.createdAt})`,
    })
    .from(contactActivities)
    .where(and(eq(contactActivities.organizationId, organizationId), inJsonList(contactActivities.contactId, contactIds)))
    .groupBy(contactActivities.contactId);

export type FigureRow = { contactId: string; count: number; conversations: number; lastActivityAt: string | null };

/**
 * The two reads a write of contacts starts from: the rows, and their activity figures. The organization's term is
 * `+organization_id` so that SQLite looks the ids up by primary key: offered the organization's indexes, it walked
 * every contact of the organization through one of them (10,000 contacts: a write's read took ~100 ms, not ~1).
 */
export const writeReads = (db: Db, organizationId: string | SQL, contactIds: string[]) =>
  [
    db
      .select()
      .from(contacts)
      .where(idsOf(contacts, organizationId, contactIds)),
    activityFiguresQuery(db, organizationId, contactIds),
  ] as const;

/** A write of one contact starts from it and its activity figures (its lead score's inputs); PUT reads them with the authentication. */
export const contactWriteReads = readsForWrite<[ContactRecord[], FigureRow[]]>("Contact", "/v1/contacts", (db, organizationId, id) => [
  ...writeReads(db, organizationId, [id]),
]);

export const contactPreloads = contactWriteReads.preloads;
