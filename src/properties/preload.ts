import { and, eq } from "drizzle-orm";
import { properties } from "../db/schema";
import type { AuthPreload } from "../platform/preload";

// Apart from service.ts so that the app (which hands these to authentication) loads no more of the domain at startup.

export const preloadKey = (id: string) => `property-write:${id}`;

/** PUT /v1/properties/{id} reads its property with the authentication (platform/preload.ts): the write is then its only trip. */
export const propertyPreloads: AuthPreload[] = [
  {
    method: "PUT",
    path: /^\/v1\/properties\/([^/]+)$/,
    read: (db, organizationId, match) => ({
      key: preloadKey(match[1]!),
      statements: [
        db
          .select()
          .from(properties)
          .where(and(eq(properties.id, match[1]!), eq(properties.organizationId, organizationId))),
      ],
    }),
  },
];
