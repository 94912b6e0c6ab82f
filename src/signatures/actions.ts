import type { EnvelopeField, RecipientKind, SignerStatus, StoredValue, VerificationMethod } from "../db/signatures";
import type { DomainEvent } from "../events/event";
import { envelopeFilesPrefix } from "../files/keys";
import type { FieldIssue } from "../lib/errors";
import type { AuditInput } from "./audit";
import { checkFieldValues } from "./field-values";
import type { Env } from "../env";
import { newEvent } from "../events/outbox";
import { nowIso } from "../lib/time";
import { sendAfterCommit } from "../mail/mailer";
import type { RequestMeta, ServiceContext } from "../service-context";
import {
  CODE_MESSAGES,
  CODE_TTL_SECONDS,
  type CodeRefusal,
  LOCKED_RETRY_AFTER_SECONDS,
  MAX_FAILED_CODE_TRIES,
  maskEmail,
  type SignerCodes,
} from "./codes";
import { unmailed } from "./hosted-recipients";
import { mintToken, sendSigningLink } from "./links";
import {
  ACTIVE,
  type Change,
  DONE,
  entry,
  type Loaded,
  liveSigner,
  machineContext,
  type SignerRow,
  type SignerSet,
  write,
} from "./machine";
import { envelopeEvent } from "./present";
import { nextReminderAt } from "./reminders";
import type { SignerAction } from "./schemas";

/**
 * The signer's actions (spec: Signer state table; send_code and code are ours), run by the envelope's object on
 * the state it holds. Each answers a result and the state after it.
 */
type Defer = (w: Promise<unknown>) => void;

export type OpenResult =
  | {
      kind: "active";
      signer: { id: string; name: string; email: string; role: string; kind: RecipientKind; status: SignerStatus; documentId: string };
      /** `visible`: whether the signer may read the document now (on a `code` envelope, once the code was verified). */
      document: { title: string | null; sha256: string | null; key: string | null; visible: boolean };
      /** An uploaded document's fields for this recipient; null on a typed form. */
      fields: EnvelopeField[] | null;
      signerVerification: "code" | "attested";
    }
  | { kind: "gone" }
  | typeof NOT_YOUR_TURN;

export type ActResult =
  | { kind: "done"; completed?: boolean }
  | { kind: "code_sent"; sentTo: string; expiresInSeconds: number }
  | { kind: "gone" }
  | { kind: "refused"; status: 409 | 422 | 429; code: string; message: string; retryAfterSeconds?: number; issues?: FieldIssue[] };

/** A link whose recipient's order has not come yet (issue 44): 409 until everyone before them is done. */
export const NOT_YOUR_TURN = {
  kind: "refused",
  status: 409,
  code: "not_your_turn",
  message: "It is not your turn yet: you will receive an e-mail when the people before you are done",
} as const;

const invalidState = (message: string): ActResult => ({ kind: "refused", status: 409, code: "invalid_state", message });
const codeRefused = (code: CodeRefusal): ActResult => ({ kind: "refused", status: 422, code, message: CODE_MESSAGES[code] });

/** Which status each action moves a signer from, and to (spec: Signer state table). */
const MOVES = {
  authenticate: { from: "opened", to: "authenticated" },
  consent: { from: "authenticated", to: "consented" },
  sign: { from: "consented", to: "signed" },
  approve: { from: "consented", to: "approved" },
} as const satisfies Record<string, { from: SignerStatus; to: SignerStatus }>;

/** What each kind of recipient may do (issue 44): why not, or null. Decline and the identity steps are everyone's. */
function notFor(signer: SignerRow, action: SignerAction["action"]): string | null {
  if (action === "sign" && signer.kind !== "signer")
    return `sign is for signers: you are ${signer.kind === "approver" ? "an approver (approve or reject)" : `a ${signer.kind}`}`;
  if ((action === "approve" || action === "reject") && signer.kind !== "approver")
    return `${action} is for approvers: you are a ${signer.kind}`;
  if (action === "consent" && signer.kind === "viewer") return "Nothing is asked of a viewer beyond reading the document";
  return null;
}

/** GET /api/public/sign/{token}: the first open moves the signer from sent to opened and records it. */
export async function openLink(
  env: Env,
  loaded: Loaded,
  tokenHash: string,
  meta: RequestMeta,
  defer: Defer,
): Promise<{ result: OpenResult; state: Loaded }> {
  const live = await liveSigner(env, loaded, tokenHash, defer);
  let state = live.state;
  const signer = live.signer;
  if (live.waiting) return { result: NOT_YOUR_TURN, state };
  if (!signer) return { result: { kind: "gone" }, state };
  let status: SignerStatus = signer.status;
  if (signer.status === "sent") {
    const ctx = machineContext(env, state, defer);
    const before = state;
    const opened = [entry("opened", signer.id, meta)];
    const openedEvent = (after: Pick<Loaded, "envelope" | "signers">) => envelopeEvent(ctx, "envelope.opened", after, before, signer.id);
    if (signer.kind === "viewer" && state.envelope.signerVerification !== "code") {
      // A viewer is done once they have the document before them.
      state = (
        await finish(
          env,
          state,
          signer,
          "sent",
          { status: "viewed" },
          [...opened, entry("viewed", signer.id, meta)],
          meta,
          defer,
          openedEvent,
        )
      ).state;
      status = "viewed";
    } else {
      state = await write(ctx, state, {
        signers: [{ id: signer.id, from: "sent", set: { status: "opened" } }],
        audit: opened,
        events: (after) => [openedEvent(after)],
      });
      status = "opened";
    }
  }
  const e = state.envelope;
  return {
    result: {
      kind: "active",
      signer: {
        id: signer.id,
        name: signer.name,
        email: signer.email,
        role: signer.role,
        kind: signer.kind,
        status,
        documentId: e.documentId,
      },
      // Whoever holds a forwarded link of a code envelope reads none of the parties' details before the code.
      document: {
        title: e.documentTitle,
        sha256: e.documentSha256,
        key: e.documentKey,
        visible: e.signerVerification !== "code" || status !== "opened",
      },
      fields: signer.fields,
      signerVerification: e.signerVerification,
    },
    state,
  };
}

/** POST /api/public/sign/{token}: one signer action, in the order the state table allows. */
export async function act(
  env: Env,
  loaded: Loaded,
  codes: SignerCodes,
  tokenHash: string,
  input: SignerAction,
  meta: RequestMeta,
  defer: Defer,
  /** Through a signing session's link (issue 45): what the signature's audit entry records of how it was made. */
  via: Record<string, unknown> | null = null,
): Promise<{ result: ActResult; state: Loaded }> {
  const live = await liveSigner(env, loaded, tokenHash, defer);
  const state = live.state;
  const signer = live.signer;
  if (live.waiting) return { result: NOT_YOUR_TURN, state };
  if (!signer) return { result: { kind: "gone" }, state };
  const ctx = machineContext(env, state, defer);
  const done = (next: Loaded, result: ActResult = { kind: "done" }) => ({ result, state: next });

  const ending = input.action === "decline" || input.action === "reject";
  if (ending && state.envelope.signerVerification === "code" && (signer.status === "sent" || signer.status === "opened")) {
    // A code envelope is ended only by its verified signer, not by whoever holds a forwarded link.
    return {
      result: {
        kind: "refused",
        status: 409,
        code: "verification_required",
        message: `${input.action === "reject" ? "Rejecting" : "Declining"} needs the code mailed to you first: request one with send_code and authenticate with it`,
      },
      state,
    };
  }
  const refusedFor = notFor(signer, input.action);
  if (refusedFor) return { result: invalidState(refusedFor), state };
  if (input.action === "reject" && !input.reason?.trim())
    return {
      result: { kind: "refused", status: 422, code: "reason_required", message: "A rejection needs a reason (reason)" },
      state,
    };
  if (ending) {
    // An approver's rejection ends the envelope as a decline does; the audit trail says which it was.
    codes.forget(state.signers.map((s) => s.id));
    return done(
      await write(ctx, state, {
        envelope: { status: "declined", endedReason: input.action === "reject" ? "rejected" : "declined" },
        signers: [{ id: signer.id, from: [...ACTIVE], set: { status: "declined", declinedAt: nowIso() } }],
        killLinks: true,
        document: "GENERATED",
        audit: [
          entry(
            input.action === "reject" ? "rejected" : "declined",
            signer.id,
            meta,
            input.reason === undefined ? null : { reason: input.reason },
          ),
        ],
        events: (after) => [envelopeEvent(ctx, "envelope.declined", after, state, signer.id)],
      }),
    );
  }

  if ((input.action === "send_code" || input.action === "authenticate") && codes.isLocked(signer.id))
    return refuseLocked(ctx, state, codes, signer, meta);

  if (input.action === "send_code") {
    if (signer.status !== "opened")
      return {
        result: invalidState(`send_code is not possible now: the signer is ${signer.status}; a code is sent before authenticate`),
        state,
      };
    const wait = codes.waitBeforeSend(signer.id);
    if (wait > 0)
      return {
        result: {
          kind: "refused",
          status: 429,
          code: "code_resend_too_soon",
          message: wait > 60 ? CODE_MESSAGES.code_hourly_limit : CODE_MESSAGES.code_resend_too_soon,
          retryAfterSeconds: wait,
        },
        state,
      };
    const code = await codes.issue(signer.id);
    const sentTo = maskEmail(signer.email);
    const next = await write(ctx, state, { audit: [entry("code_sent", signer.id, meta, { sentTo })] });
    defer(mailCode(env, state, signer, code));
    return { result: { kind: "code_sent", sentTo, expiresInSeconds: CODE_TTL_SECONDS }, state: next };
  }

  const move = MOVES[input.action as keyof typeof MOVES];
  if (signer.status !== move.from)
    return {
      result: invalidState(`${input.action} is not possible now: the signer is ${signer.status}, and ${input.action} follows ${move.from}`),
      state,
    };

  if (input.action === "authenticate") {
    let method: VerificationMethod;
    if (input.code !== undefined) {
      const checked = await codes.check(signer.id, input.code);
      if (checked === "locked") return refuseLocked(ctx, state, codes, signer, meta);
      if (checked !== "ok") return { result: codeRefused(checked), state };
      method = "email_code";
    } else if (input.codeVerified === true) {
      if (state.envelope.signerVerification === "code") {
        return {
          result: {
            kind: "refused",
            status: 409,
            code: "verification_required",
            message: "This envelope needs the server to verify the signer: request a code with send_code and authenticate with it",
          },
          state,
        };
      }
      method = "client_attested";
    } else {
      return {
        result: invalidState(
          "authenticate needs the code mailed to the signer (code), or codeVerified: true where the envelope allows attestation",
        ),
        state,
      };
    }
    if (method === "email_code") codes.consume(signer.id);
    if (signer.kind === "viewer") {
      // A viewer on a code envelope sees the document once verified: that is all that is asked of them.
      const audit = [entry("authenticated", signer.id, meta, { method }), entry("viewed", signer.id, meta)];
      return finish(env, state, signer, "opened", { status: "viewed", verification: method }, audit, meta, defer);
    }
    const next = await write(ctx, state, {
      signers: [{ id: signer.id, from: "opened", set: { status: "authenticated", verification: method } }],
      audit: [entry("authenticated", signer.id, meta, { method })],
    });
    return done(next);
  }
  if (input.action === "consent") {
    return done(
      await write(ctx, state, {
        signers: [{ id: signer.id, from: "authenticated", set: { status: "consented" } }],
        audit: [entry("consented", signer.id, meta)],
      }),
    );
  }
  return sign(env, state, codes, signer, input, meta, defer, via);
}

/**
 * A signer whose code verification is locked (codes.ts): 429 until the sender sends a new link. The lock's entry in
 * the audit trail is written once; a write that failed (a lost race, a move) is written by the next refused call.
 */
async function refuseLocked(
  ctx: ServiceContext,
  state: Loaded,
  codes: SignerCodes,
  signer: SignerRow,
  meta: RequestMeta,
): Promise<{ result: ActResult; state: Loaded }> {
  let next = state;
  if (codes.lockUnaudited(signer.id)) {
    next = await write(ctx, state, { audit: [entry("verification_locked", signer.id, meta, { failedTries: MAX_FAILED_CODE_TRIES })] });
    codes.markLockAudited(signer.id);
  }
  return {
    result: {
      kind: "refused",
      status: 429,
      code: "verification_locked",
      message: CODE_MESSAGES.verification_locked,
      retryAfterSeconds: LOCKED_RETRY_AFTER_SECONDS,
    },
    state: next,
  };
}

/**
 * A signer signs, or an approver approves: on an uploaded document with their fields' values (checked all at once, drawn signatures stored in
 * R2 first, under the envelope's own prefix), on a typed form as the adopted typed name.
 */
async function sign(
  env: Env,
  state: Loaded,
  codes: SignerCodes,
  signer: SignerRow,
  input: SignerAction,
  meta: RequestMeta,
  defer: Defer,
  via: Record<string, unknown> | null,
): Promise<{ result: ActResult; state: Loaded }> {
  let fieldValues: Record<string, StoredValue> | undefined;
  if (signer.fields) {
    const checked = checkFieldValues(signer, signer.fields, input.fields ?? {});
    if (checked.issues.length > 0)
      return {
        result: {
          kind: "refused",
          status: 422,
          code: "invalid_fields",
          message: "Some fields need your attention",
          issues: checked.issues,
        },
        state,
      };
    for (const { fieldId, png } of checked.drawn) {
      const key = drawnSignatureKey(state.envelope.organizationId, state.envelope.id, signer.id, fieldId);
      await env.FILES.put(key, png, { httpMetadata: { contentType: "image/png" } });
      checked.values[fieldId] = { image: key };
    }
    fieldValues = checked.values;
  } else if (input.fields && Object.keys(input.fields).length > 0) {
    return {
      result: {
        kind: "refused",
        status: 422,
        code: "invalid_fields",
        message: "This document has no fields to fill",
        issues: [{ field: "fields", path: ["fields"], code: "no_fields", message: "This document has no fields to fill" }],
      },
      state,
    };
  }
  const ctx = machineContext(env, state, defer);
  const approving = input.action === "approve";
  const set = {
    status: approving ? ("approved" as const) : ("signed" as const),
    signedAt: nowIso(),
    ...(fieldValues ? { fieldValues } : {}),
  };
  const out = await finish(
    env,
    state,
    signer,
    "consented",
    set,
    [entry(approving ? "approved" : "signed", signer.id, meta, via)],
    meta,
    defer,
    (after) => envelopeEvent(ctx, approving ? "envelope.approved" : "envelope.signer_signed", after, state, signer.id),
  );
  codes.forget(out.result.completed ? state.signers.map((s) => s.id) : [signer.id]);
  return out;
}

/** Where a signer's drawn signature for one field is kept: under the envelope's prefix, so its erasure takes it. */
export const drawnSignatureKey = (organizationId: string, envelopeId: string, signerId: string, fieldId: string) =>
  `${envelopeFilesPrefix(organizationId, envelopeId)}signatures/${signerId}/${fieldId}.png`;

/**
 * A recipient has done what was asked (signed, approved, viewed): their links die, and either every recipient but the
 * cc's is done (the envelope completes: the catalogue's envelope.completed, DOCUMENT_SIGNED for the seal, certificate
 * and obligations, the cc's marked copied) or the next order's turn may have come: each of its recipients is sent a
 * new link, mailed once the write is committed (their first link, on an uploaded document, becomes live too).
 */
async function finish(
  env: Env,
  state: Loaded,
  signer: SignerRow,
  from: SignerStatus,
  set: SignerSet,
  audit: AuditInput[],
  meta: RequestMeta,
  defer: Defer,
  ownEvent?: (after: Pick<Loaded, "envelope" | "signers">) => DomainEvent,
): Promise<{ result: { kind: "done"; completed: boolean }; state: Loaded }> {
  const ctx = machineContext(env, state, defer);
  const at = nowIso();
  const signers = state.signers.map((s) => (s.id === signer.id ? { ...s, ...set } : s));
  const required = signers.filter((s) => s.kind !== "cc");
  const completed = required.every((s) => DONE.has(s.status));
  const change: Change = {
    signers: [{ id: signer.id, from, set: { ...set, remindAt: null } }],
    killSignerLinks: [signer.id],
    audit,
    events: (after) => [
      ...(ownEvent ? [ownEvent(after)] : []),
      ...(completed
        ? [
            envelopeEvent(ctx, "envelope.completed", after, state),
            newEvent(ctx, "DOCUMENT_SIGNED", {
              envelopeId: state.envelope.id,
              documentId: state.envelope.documentId,
              completedAt: at,
              signers: required.map((s) => ({ id: s.id, name: s.name, email: s.email, role: s.role, signedAt: s.signedAt })),
            }),
          ]
        : []),
    ],
  };
  const handOffs: { signer: SignerRow; token: string }[] = [];
  if (completed) {
    Object.assign(change, { envelope: { status: "completed", completedAt: at }, document: "SIGNED", killLinks: true });
    for (const cc of signers.filter((s) => s.kind === "cc" && s.status === "pending"))
      change.signers!.push({ id: cc.id, from: "pending", set: { status: "copied" } });
  } else {
    // The turn is the lowest order with someone still to act; its recipients not yet sent are sent now.
    const turn = Math.min(...required.filter((s) => !DONE.has(s.status)).map((s) => s.signingOrder));
    for (const next of required.filter((s) => s.status === "pending" && s.signingOrder <= turn)) {
      // An embedded or in-person recipient (issue 45) is not mailed: their turn opens their view URL or host session.
      const mailed = !unmailed(next);
      change.signers!.push({
        id: next.id,
        from: "pending",
        set: { status: "sent", sentAt: at, remindAt: mailed ? nextReminderAt(state.envelope.reminders, new Date(at), 0) : null },
      });
      change.audit.push(entry("sent", next.id, meta, { documentSha256: state.envelope.documentSha256 }));
      if (!mailed) continue;
      const { token, hash } = await mintToken(state.envelope.id);
      change.newLinks = [...(change.newLinks ?? []), { tokenHash: hash, signerId: next.id }];
      handOffs.push({ signer: next, token });
    }
  }
  const after = await write(ctx, state, change);
  for (const h of handOffs)
    defer(sendSigningLink(env, state.tenant.db, state.envelope.organizationId, h.signer, h.token, "request", null, state.envelope.message));
  return { result: { kind: "done", completed }, state: after };
}

const mailCode = (env: Env, { tenant, envelope }: Loaded, signer: SignerRow, code: string) =>
  sendAfterCommit(
    env,
    tenant.db,
    {
      organizationId: envelope.organizationId,
      to: signer.email,
      // The code stays out of the subject: the log provider seals bodies only, and subjects show in every mail list.
      subject: "Your signing code",
      text: `Hello ${signer.name},\n\nYour code to confirm it is you who signs: ${code}\nIt works once, for ${CODE_TTL_SECONDS / 60} minutes. If you did not ask for it, ignore this message.`,
    },
    "signing code",
  );
