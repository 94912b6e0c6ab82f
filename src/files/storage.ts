import { loggableError } from "../lib/log";
import type { Files, ServiceContext } from "../service-context";

/** Deletes files from R2: the given keys, and everything under `prefix` (all files of a property or a deal). Throws on failure. */
export async function removeFiles(files: Files, keys: string[], prefix?: string): Promise<void> {
  if (keys.length) await files.delete(keys);
  if (!prefix) return;
  let cursor: string | undefined;
  do {
    const page = await files.list({ prefix, cursor, limit: 1000 });
    if (page.objects.length) await files.delete(page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
}

/**
 * `removeFiles` after the database write it follows has landed (a replaced photo): a failure is logged and left for a
 * later cleanup rather than failing a request whose change is already made.
 */
export async function deleteFiles(ctx: Pick<ServiceContext, "files" | "log">, keys: string[], prefix?: string): Promise<void> {
  try {
    await removeFiles(ctx.files, keys, prefix);
  } catch (err) {
    ctx.log.warn("files not deleted", { prefix, keys: keys.length, error: loggableError(err) });
  }
}
