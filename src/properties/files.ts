import { deleteFiles } from "../files/storage";
import type { ServiceContext } from "../service-context";

/** Deletes files of a property from R2: the given keys, and everything under `prefix` (a deleted property). */
export const deletePropertyFiles = (ctx: Pick<ServiceContext, "files" | "log">, keys: string[], prefix?: string): Promise<void> =>
  deleteFiles(ctx, keys, prefix);
