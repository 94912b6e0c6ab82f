import type { Env } from "../env";
import { loggableError } from "../lib/log";

/** R2 keys of a property's files: photos and reports, under one prefix so a deleted property's files go together. */
export const propertyPrefix = (organizationId: string, propertyId: string) => `properties/${organizationId}/${propertyId}/`;

/** Deletes files of a property from R2: the given keys, and everything under `prefix` (a deleted property). */
export async function deletePropertyFiles(env: Env, keys: string[], prefix?: string): Promise<void> {
  try {
    if (keys.length) await env.FILES.delete(keys);
    if (!prefix) return;
    let cursor: string | undefined;
    do {
      const page = await env.FILES.list({ prefix, cursor, limit: 1000 });
      if (page.objects.length) await env.FILES.delete(page.objects.map((o) => o.key));
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor);
  } catch (err) {
    console.warn(JSON.stringify({ message: "property files not deleted", prefix, keys: keys.length, error: loggableError(err) }));
  }
}

