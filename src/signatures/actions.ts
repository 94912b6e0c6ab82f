import type { SignerStatus, VerificationMethod } from "../db/signatures";
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
import { mintToken, sendSigningLink } from "./links";
import { ACTIVE, type Change, entry, type Loaded, liveSigner, machineContext, type SignerRow, write } from "./machine";
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
      signer: { id: string; name: string; role: string; status: SignerStatus; documentId: string };
      /** `visible`: whether the signer may read the document now (on a `code` envelope, once the code was verified). */
      document: { title: string | null; sha256: string | null; key: string | null; visible: boolean };
      signerVerification: "code" | "attested";
    }
  | { kind: "gone" };

export type ActResult =
  | { kind: "done"; completed?: boolean }
  | { kind: "code_sent"; sentTo: string; expiresInSeconds: number }
  | { kind: "gone" }
  | { kind: "refused"; status: 409 | 422 | 429; code: string; message: string; retryAfterSeconds?: number };

const invalidState = (message: string): ActResult => ({ kind: "refused", status: 409, code: "invalid_state", message });
const codeRefused = (code: CodeRefusal): ActResult => ({ kind: "refused", status: 422, code, message: CODE_MESSAGES[code] });

/** Which status each action moves a signer from, and to (spec: Signer state table). */
const MOVES = {
  authenticate: { from: "opened", to: "authenticated" },
  consent: { from: "authenticated", to: "consented" },
  sign: { from: "consented", to: "signed" },
} as const satisfies Record<string, { from: SignerStatus; to: SignerStatus }>;

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
  if (!signer) return { result: { kind: "gone" }, state };
  if (signer.status === "sent") {
    const ctx = machineContext(env, state, defer);
    const before = state;
    state = await write(ctx, state, {
      signers: [{ id: signer.id, from: "sent", set: { status: "opened" } }],
      audit: [entry("opened", signer.id, meta)],
      events: (after) => [envelopeEvent(ctx, "envelope.opened", after, before, signer.id)],
    });
  }
  const e = state.envelope;
  const status = signer.status === "sent" ? "opened" : signer.status;
  return {
    result: {
      kind: "active",
      signer: { id: signer.id, name: signer.name, role: signer.role, status, documentId: e.documentId },
      // Whoever holds a forwarded link of a code envelope reads none of the parties' details before the code.
      document: {
        title: e.documentTitle,
        sha256: e.documentSha256,
        key: e.documentKey,
        visible: e.signerVerification !== "code" || status !== "opened",
      },
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
): Promise<{ result: ActResult; state: Loaded }> {
  const live = await liveSigner(env, loaded, tokenHash, defer);
  const state = live.state;
  const signer = live.signer;
  if (!signer) return { result: { kind: "gone" }, state };
  const ctx = machineContext(env, state, defer);
  const done = (next: Loaded, result: ActResult = { kind: "done" }) => ({ result, state: next });

  if (
    input.action === "decline" &&
    state.envelope.signerVerification === "code" &&
    (signer.status === "sent" || signer.status === "opened")
  ) {
    // A code envelope is ended only by its verified signer, not by whoever holds a forwarded link.
    return {
      result: {
        kind: "refused",
        status: 409,
        code: "verification_required",
        message: "Declining needs the code mailed to you first: request one with send_code and authenticate with it",
      },
      state,
    };
  }
  if (input.action === "decline") {
    codes.forget(state.signers.map((s) => s.id));
    return done(
      await write(ctx, state, {
        envelope: { status: "declined", endedReason: "declined" },
        signers: [{ id: signer.id, from: [...ACTIVE], set: { status: "declined", declinedAt: nowIso() } }],
        killLinks: true,
        document: "GENERATED",
        audit: [entry("declined", signer.id, meta, input.reason === undefined ? null : { reason: input.reason })],
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

  const move = MOVES[input.action];
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
    const next = await write(ctx, state, {
      signers: [{ id: signer.id, from: "opened", set: { status: "authenticated", verification: method } }],
      audit: [entry("authenticated", signer.id, meta, { method })],
    });
    if (method === "email_code") codes.consume(signer.id);
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
  return sign(env, state, codes, signer, meta, defer);
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

async function sign(
  env: Env,
  state: Loaded,
  codes: SignerCodes,
  signer: SignerRow,
  meta: RequestMeta,
  defer: Defer,
): Promise<{ result: ActResult; state: Loaded }> {
  const ctx = machineContext(env, state, defer);
  const at = nowIso();
  const signers = state.signers.map((s) => (s.id === signer.id ? { ...s, status: "signed" as const, signedAt: at } : s));
  const completed = signers.every((s) => s.status === "signed");
  const change: Change = {
    signers: [{ id: signer.id, from: "consented", set: { status: "signed", signedAt: at, remindAt: null } }],
    killSignerLinks: [signer.id],
    audit: [entry("signed", signer.id, meta)],
    events: (after) => [
      envelopeEvent(ctx, "envelope.signer_signed", after, state, signer.id),
      // The last signature: the catalogue's envelope.completed, and DOCUMENT_SIGNED for the seal, certificate and obligations.
      ...(completed
        ? [
            envelopeEvent(ctx, "envelope.completed", after, state),
            newEvent(ctx, "DOCUMENT_SIGNED", {
              envelopeId: state.envelope.id,
              documentId: state.envelope.documentId,
              completedAt: at,
              signers: signers.map((s) => ({ id: s.id, name: s.name, email: s.email, role: s.role, signedAt: s.signedAt })),
            }),
          ]
        : []),
    ],
  };
  let handOff: { signer: SignerRow; token: string } | null = null;
  if (completed) {
    Object.assign(change, { envelope: { status: "completed", completedAt: at }, document: "SIGNED", killLinks: true });
  } else if (state.envelope.mode === "sequential") {
    // The next signer's turn: its token is minted now and mailed once the signature is committed.
    const next = signers.find((s) => s.status === "pending");
    if (next) {
      const { token, hash } = await mintToken(state.envelope.id);
      change.signers!.push({
        id: next.id,
        from: "pending",
        set: { status: "sent", sentAt: at, remindAt: nextReminderAt(state.envelope.reminders, new Date(at), 0) },
      });
      change.newLinks = [{ tokenHash: hash, signerId: next.id }];
      change.audit.push(entry("sent", next.id, meta, { documentSha256: state.envelope.documentSha256 }));
      handOff = { signer: next, token };
    }
  }
  const after = await write(ctx, state, change);
  codes.forget(completed ? state.signers.map((s) => s.id) : [signer.id]);
  if (handOff) defer(sendSigningLink(env, state.tenant.db, state.envelope.organizationId, handOff.signer, handOff.token));
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
