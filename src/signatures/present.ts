import type { envelopes, envelopeSigners } from "../db/schema";
import type { EnvelopeField, StoredValue } from "../db/signatures";
import type { DomainEvent } from "../events/event";
import { resourceEvent } from "../events/resource-event";
import type { ServiceContext } from "../service-context";
import type { Envelope } from "./schemas";

/**
 * An envelope as the read routes show it (GET /api/signatures/{id}), and the catalogue events that carry it: the
 * same object, so a webhook receiver and a poller see one shape. Never a signing token.
 */
type EnvelopeRow = typeof envelopes.$inferSelect;
type SignerRow = typeof envelopeSigners.$inferSelect;

const fileStatus = (e: EnvelopeRow, key: string | null, url: string) =>
  e.status !== "completed"
    ? { status: "not_applicable" as const, url: null }
    : key
      ? { status: "ready" as const, url }
      : { status: "pending" as const, url: null };

export function toEnvelope(e: EnvelopeRow, signers: SignerRow[]): Envelope {
  return {
    id: e.id,
    documentId: e.documentId,
    status: e.status,
    mode: e.mode,
    source: e.source,
    templateId: e.templateId,
    message: e.message,
    createdAt: e.createdAt,
    completedAt: e.completedAt,
    expiresAt: e.expiresAt,
    signers: signers.map(toSigner),
    signerVerification: e.signerVerification,
    reminders: e.reminders,
    document: { title: e.documentTitle, sha256: e.documentSha256 },
    certificate: fileStatus(e, e.certificateKey, `/api/signatures/${e.id}/certificate`),
    signedDocument: fileStatus(e, e.sealedKey, `/api/signatures/${e.id}/document`),
  };
}

const toSigner = (s: SignerRow): Envelope["signers"][number] => ({
  id: s.id,
  name: s.name,
  email: s.email,
  role: s.role,
  ...(s.key ? { key: s.key } : {}),
  order: s.signingOrder,
  status: s.status,
  ...(s.signedAt ? { signedAt: s.signedAt } : {}),
  ...(s.sentAt ? { sentAt: s.sentAt } : {}),
  ...(s.verification ? { verification: s.verification } : {}),
  embedded: s.embedded,
  inPerson: s.hostUserId ? { hostUserId: s.hostUserId } : null,
  ...(s.fields ? { fields: s.fields.map((f) => filledField(f, s.fieldValues?.[f.id])) } : {}),
});

/**
 * A recipient's field as the sender reads it: where it is and what it takes, and what was filled in (text as given,
 * a checkbox's state, `adopted` or `drawn` for a signature; the drawn image itself stays in the sealed copy).
 */
function filledField(f: EnvelopeField, v: StoredValue | undefined) {
  const filled = v === undefined ? null : "text" in v ? v.text : "checked" in v ? v.checked : "adopted" in v ? "adopted" : "drawn";
  return { ...f, filled };
}

interface EnvelopeState {
  envelope: EnvelopeRow;
  signers: SignerRow[];
}

/**
 * `envelope.<what>`: the envelope after the transition as `data.object`, what changed since `before`, for the moves
 * of one signer (opened, signer_signed, declined) that signer as `data.signer`, and `extra` beside them.
 */
export function envelopeEvent(
  ctx: Pick<ServiceContext, "organizationId" | "actor">,
  type: string,
  after: EnvelopeState,
  before: EnvelopeState | null,
  signerId?: string,
  extra: Record<string, unknown> = {},
): DomainEvent {
  const signer = signerId === undefined ? undefined : after.signers.find((s) => s.id === signerId);
  return resourceEvent(ctx, type, toEnvelope(after.envelope, after.signers), before && toEnvelope(before.envelope, before.signers), {
    ...(signer ? { signer: toSigner(signer) } : {}),
    ...extra,
  });
}
