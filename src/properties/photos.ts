import type { StoredPhoto } from "../db/schema";
import { withRetries } from "../db/write";
import { newEvent } from "../events/outbox";
import { readConfig } from "../env";
import { type FieldIssue, NotConfigured, PayloadTooLarge, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import type { ServiceContext } from "../service-context";
import { propertyPrefix } from "../files/keys";
import { imageTypeOf } from "../files/types";
import { discardUploads, putUploads, settleUploads } from "../files/uploads";
import { toProperty } from "./mapping";
import { MAX_PHOTOS, type PropertyPhoto } from "./schemas";
import { present } from "./present";
import { commitProperty, readPropertyForWrite } from "./service";
import { replaceProperty } from "./writes";

/** Per file; the request as a whole is bounded by the route's body limit (platform/body-limit.ts). */
export const MAX_PHOTO_BYTES = 10 * 1024 * 1024;
export const MAX_PHOTOS_PER_UPLOAD = 20;

export interface PhotoUpload {
  photos: File[];
  captions: string[];
  order: number[];
}

/** Every problem of an upload at once: count, size (413 before anything else), type by content, captions and order. */
async function checkUpload(upload: PhotoUpload): Promise<{ bytes: ArrayBuffer; type: string }[]> {
  const { photos, captions, order } = upload;
  const tooBig = photos.find((f) => f.size > MAX_PHOTO_BYTES);
  if (tooBig) throw new PayloadTooLarge(MAX_PHOTO_BYTES);
  const issues: FieldIssue[] = [];
  const issue = (path: (string | number)[], code: string, message: string) => issues.push({ field: path.join("."), path, code, message });
  if (photos.length === 0) issue(["photos"], "required", "Send at least one file in the photos field");
  if (photos.length > MAX_PHOTOS_PER_UPLOAD) issue(["photos"], "too_big", `At most ${MAX_PHOTOS_PER_UPLOAD} photos per upload`);
  if (captions.length > photos.length) issue(["captions"], "too_big", "More captions than photos");
  if (order.length > 1 && order.length !== photos.length)
    issue(["order"], "invalid_order", "Give one order (of the first photo) or one per photo");
  const files = await Promise.all(photos.map(async (f) => ({ bytes: await f.arrayBuffer(), type: "" })));
  files.forEach((f, i) => {
    const type = imageTypeOf(new Uint8Array(f.bytes, 0, Math.min(16, f.bytes.byteLength)));
    if (!type) issue(["photos", i], "unsupported_image_type", "Not a JPEG, PNG, GIF, WebP, AVIF or HEIC image (judged by its content)");
    f.type = type ?? "";
  });
  if (issues.length) throw new Validation(issues);
  return files;
}

/**
 * POST /v1/properties/{id}/photos. The files go to R2 first, then the photo list in one guarded write (retried on a
 * concurrent change, so concurrent uploads all land). The files are pending until that write lands (files/uploads.ts):
 * deleted again when it cannot land, by the cron when nothing could. Emits property.photos_uploaded; with an
 * Idempotency-Key the answer is kept in the same batch.
 */
export async function uploadPhotos(ctx: ServiceContext, id: string, upload: PhotoUpload): Promise<PropertyPhoto[]> {
  if (!readConfig(ctx.env).FILES_URL_SECRET) throw new NotConfigured("FILES_URL_SECRET");
  const files = await checkUpload(upload);
  await readPropertyForWrite(ctx, id);
  const uploadedAt = new Date().toISOString();
  const fresh: StoredPhoto[] = files.map((f, i) => ({
    id: newId(),
    key: `${propertyPrefix(ctx.organizationId, id)}photos/${newId()}`,
    contentType: f.type,
    size: f.bytes.byteLength,
    caption: upload.captions[i]?.trim() || null,
    order: 0,
    uploadedAt,
  }));
  const keys = fresh.map((p) => p.key!);
  try {
    await putUploads(
      ctx,
      fresh.map((p, i) => ({
        key: p.key!,
        bytes: files[i]!.bytes,
        httpMetadata: { contentType: p.contentType, contentDisposition: "inline" },
      })),
    );
    return await withRetries(async () => {
      const before = await readPropertyForWrite(ctx, id);
      if (before.photos.length + fresh.length > MAX_PHOTOS) {
        throw new Validation([
          {
            field: "photos",
            path: ["photos"],
            code: "too_many_photos",
            message: `A property has at most ${MAX_PHOTOS} photos; this one has ${before.photos.length}`,
          },
        ]);
      }
      const start = upload.order.length === 1 ? upload.order[0]! : Math.max(-1, ...before.photos.map((p) => p.order)) + 1;
      const added = fresh.map((p, i) => ({
        ...p,
        order: upload.order.length === fresh.length && fresh.length > 1 ? upload.order[i]! : start + i,
      }));
      const now = new Date().toISOString();
      const after = { ...before, photos: [...before.photos, ...added], updatedAt: now, version: before.version + 1 };
      const object = toProperty(after);
      const event = newEvent(ctx, "property.photos_uploaded", {
        object,
        previousAttributes: null,
        changes: ["media.photos"],
        photos: added.map(({ id: photoId, caption, order, uploadedAt: at }) => ({ id: photoId, caption, order, uploadedAt: at })),
      });
      const [shown] = await present(ctx, [after], [], true);
      const ids = new Set(added.map((p) => p.id));
      const answer = shown!.media.photos!.filter((p) => ids.has(p.id));
      await commitProperty(ctx, [...replaceProperty(ctx, before, after), ...settleUploads(ctx, keys)], [event], { answer });
      return answer;
    });
  } catch (err) {
    ctx.defer(discardUploads(ctx, keys));
    throw err;
  }
}

/** PUT /v1/properties/{id}/photos/order: the named photos take the given order; the rest keep theirs. */
export async function reorderPhotos(
  ctx: ServiceContext,
  id: string,
  photoOrder: { id: string; order: number }[],
): Promise<PropertyPhoto[]> {
  return withRetries(async () => {
    const before = await readPropertyForWrite(ctx, id);
    const known = new Set(before.photos.map((p) => p.id));
    const issues = photoOrder.flatMap((p, i): FieldIssue[] =>
      known.has(p.id)
        ? []
        : [
            {
              field: `photoOrder.${i}.id`,
              path: ["photoOrder", i, "id"],
              code: "invalid_reference",
              message: "This property has no photo with this id",
            },
          ],
    );
    if (issues.length) throw new Validation(issues);
    const wanted = new Map(photoOrder.map((p) => [p.id, p.order]));
    const photos = before.photos.map((p) => ({ ...p, order: wanted.get(p.id) ?? p.order }));
    const after = { ...before, photos, updatedAt: new Date().toISOString(), version: before.version + 1 };
    if (JSON.stringify(photos) !== JSON.stringify(before.photos)) {
      const object = toProperty(after);
      await commitProperty(ctx, replaceProperty(ctx, before, after), [
        newEvent(ctx, "property.updated", { object, previousAttributes: null, changes: ["media.photos"] }),
      ]);
    }
    const [shown] = await present(ctx, [after], [], true);
    return shown!.media.photos!;
  });
}
