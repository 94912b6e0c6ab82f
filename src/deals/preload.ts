import { and, eq } from "drizzle-orm";
import { deals } from "../db/schema";
import type { AuthPreload } from "../platform/preload";

// Apart from service.ts so that the app (which hands these to authentication) loads no more of the domain at startup.

export const preloadKey = (id: string) => `deal-write:${id}`;

/** PUT /v1/deals/{id} reads its deal with the authentication (platform/preload.ts): the write is then its only trip. */
export const dealPreloads: AuthPreload[] = [
  {
    method: "PUT",
    path: /^\/v1\/deals\/([^/]+)$/,
    read: (db, organizationId, match) => ({
      key: preloadKey(match[1]!),
      statements: [
        db
          .select()
          .from(deals)
          .where(and(eq(deals.id, match[1]!), eq(deals.organizationId, organizationId))),
      ],
    }),
  },
];
