import type { Env } from "../env";
import type { RequestMeta } from "../service-context";
import type { SignerCodes } from "./codes";
import { unmailed } from "./hosted-recipients";
import { mintToken } from "./links";
import { DONE, end, entry, isExpired, type Loaded, machineContext, type SignerRow, TERMINAL, write } from "./machine";

/**
 * POST /api/signatures/{envelopeId}/signers/{signerId}/resend, run by the envelope's object: a new link for
 * one signer whose turn it is, for a signer who lost the mail or whose code verification is locked (codes.ts). The
 * signer's earlier links die in the same write that makes the new one live, and the signer's codes start afresh
 * (codes.ts `forget`: the lock, its failure count, the pending code and the send limits go), so they can ask a code
 * at once; a signer who had verified verifies again. Only the new token's SHA-256 is stored; the raw token goes back to the
 * caller, for the answer and the mail.
 */
export type ResendResult =
  | { kind: "resent"; signer: Pick<SignerRow, "id" | "name" | "email" | "role" | "key" | "signingOrder">; token: string }
  | { kind: "not_found" }
  | { kind: "cannot_resend"; message: string };

type Defer = (w: Promise<unknown>) => void;

export async function resendLink(
  env: Env,
  state: Loaded,
  codes: SignerCodes,
  signerId: string,
  actorUserId: string | null,
  meta: RequestMeta,
  defer: Defer,
): Promise<{ result: ResendResult; state: Loaded }> {
  const signer = state.signers.find((s) => s.id === signerId);
  if (!signer) return { result: { kind: "not_found" }, state };
  const ctx = machineContext(env, state, defer, { type: "user", userId: actorUserId });
  const refuse = (message: string, next = state) => ({ result: { kind: "cannot_resend" as const, message }, state: next });
  if (TERMINAL.has(state.envelope.status)) return refuse(`The envelope is ${state.envelope.status}: its links stay dead`);
  if (isExpired(state.envelope))
    return refuse(
      "The envelope has expired: its links stay dead",
      await end(ctx, state, "expired", "expired", { ip: null, userAgent: null }),
    );
  if (DONE.has(signer.status) || signer.status === "declined") return refuse(`The signer has already ${signer.status}`);
  if (signer.kind === "cc") return refuse("A cc has no link: they receive the sealed copy when the envelope completes");
  if (unmailed(signer))
    return refuse("This recipient signs embedded or in person: they are never mailed a link (ask for a view URL or a host session)");
  // Signing order: the signer's link is mailed when everyone before them is done, not earlier.
  if (signer.status === "pending")
    return refuse("It is not this signer's turn yet (signing order): their link is sent when everyone before them is done");

  const { token, hash } = await mintToken(state.envelope.id);
  const unlocked = codes.isLocked(signer.id);
  // A verification proves who holds a link, not who the signer is forever: a signer who had verified (or consented)
  // on the old link verifies again on the new one, so whoever else holds it (the sender, who gets it in the answer)
  // cannot consent or sign in the signer's name.
  const reverify = signer.status === "authenticated" || signer.status === "consented";
  const next = await write(ctx, state, {
    ...(reverify ? { signers: [{ id: signer.id, from: signer.status, set: { status: "opened" as const, verification: null } }] } : {}),
    killSignerLinks: [signer.id],
    newLinks: [{ tokenHash: hash, signerId: signer.id }],
    audit: [entry("resent", signer.id, meta, { ...(actorUserId ? { userId: actorUserId } : {}), unlocked })],
  });
  codes.forget([signer.id]);
  return {
    result: {
      kind: "resent",
      signer: {
        id: signer.id,
        name: signer.name,
        email: signer.email,
        role: signer.role,
        key: signer.key,
        signingOrder: signer.signingOrder,
      },
      token,
    },
    state: next,
  };
}
