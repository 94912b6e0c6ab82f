/**
 * Where a record's files live in R2: every key starts `<kind>/<organizationId>/` (files/routes.ts reads the
 * organization back from it). Shared by the domains that store files and by the trash and erasure, which delete them.
 */

/** R2 keys of a deal's documents, under one prefix so a deleted deal's files go together. */
export const dealPrefix = (organizationId: string, dealId: string) => `deals/${organizationId}/${dealId}/`;
/** R2 keys of a property's files: photos and reports, under one prefix so a deleted property's files go together. */
export const propertyPrefix = (organizationId: string, propertyId: string) => `properties/${organizationId}/${propertyId}/`;
/** A property's generated reports (PDFs rendered from its fields at the time, regenerated on request). */
export const reportsPrefix = (organizationId: string, propertyId: string) => `${propertyPrefix(organizationId, propertyId)}reports/`;
/** An uploaded document's PDF (issue 44): the bytes received, or an owner-password PDF's unencrypted re-import. */
export const uploadKey = (organizationId: string, documentId: string) => `documents/${organizationId}/${documentId}.pdf`;
/** A template's own copy of its PDF (issue 45), under one prefix so the purge of a deleted template takes it. */
export const templatePrefix = (organizationId: string, templateId: string) => `templates/${organizationId}/${templateId}/`;
/** Where an envelope's own files live in R2 (its erasure removes everything under it). */
export const envelopeFilesPrefix = (organizationId: string, envelopeId: string) => `envelopes/${organizationId}/${envelopeId}/`;
