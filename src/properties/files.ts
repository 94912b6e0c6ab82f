import type { Env } from "../env";
import { deleteFiles } from "../files/storage";

/** R2 keys of a property's files: photos and reports, under one prefix so a deleted property's files go together. */
export const propertyPrefix = (organizationId: string, propertyId: string) => `properties/${organizationId}/${propertyId}/`;
/** A property's generated reports (PDFs rendered from its fields at the time, regenerated on request). */
export const reportsPrefix = (organizationId: string, propertyId: string) => `${propertyPrefix(organizationId, propertyId)}reports/`;

/** Deletes files of a property from R2: the given keys, and everything under `prefix` (a deleted property). */
export const deletePropertyFiles = (env: Env, keys: string[], prefix?: string): Promise<void> => deleteFiles(env, keys, prefix);
