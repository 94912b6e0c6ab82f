import type { Env } from "../env";
import { deleteFiles } from "../files/storage";

/** Deletes files of a property from R2: the given keys, and everything under `prefix` (a deleted property). */
export const deletePropertyFiles = (env: Env, keys: string[], prefix?: string): Promise<void> => deleteFiles(env, keys, prefix);
