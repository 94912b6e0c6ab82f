import type { LinkVia } from "../db/signatures";
import type { Env } from "../env";
import { nowIso } from "../lib/time";
import type { RequestMeta } from "../service-context";
import { registerPublicKeys } from "../shards/directory";
import { mintToken } from "./links";
import { ACTIVE, end, entry, isExpired, type Loaded, machineContext, TERMINAL, write } from "./machine";
import type { Session, SessionData, SessionKind, SigningSessions } from "./session-store";

/**
 * Issue 45, run by the envelope's object: a single-use signing session is issued (an embedded view URL, a host
 * session) and opened, each in turn with every other transition of the envelope. Opening one mints a signing link
 * (`via` embedded or in_person) whose token the page uses for the public signing API, so a signature made through a
 * session is the ordinary one, and the audit trail records how it was made.
 */
type Defer = (w: Promise<unknown>) => void;

export interface SessionRequest extends SessionData {
  kind: SessionKind;
  signerId: string;
  ttlSeconds: number;
}

export type IssueResult =
  | { kind: "issued"; token: string; expiresAt: string }
  | { kind: "not_found" }
  | { kind: "not_host" }
  | { kind: "refused"; code: string; message: string };

export type OpenSessionResult =
  | {
      kind: "opened";
      /** The signing link's raw token, for the page only. */
      token: string;
      session: Pick<Session, "kind" | "returnUrl" | "frameAncestors">;
      signer: { name: string };
    }
  | { kind: "gone" };

const VIA: Record<SessionKind, LinkVia> = { embedded: "embedded", in_person: "in_person" };

export async function issueSession(
  env: Env,
  state: Loaded,
  sessions: SigningSessions,
  request: SessionRequest,
  meta: RequestMeta,
  defer: Defer,
): Promise<{ result: IssueResult; state: Loaded }> {
  const signer = state.signers.find((s) => s.id === request.signerId);
  if (!signer) return { result: { kind: "not_found" }, state };
  const ctx = machineContext(env, state, defer, { type: "user", userId: request.requestedBy.userId });
  const refuse = (code: string, message: string, next = state) => ({ result: { kind: "refused" as const, code, message }, state: next });
  if (request.kind === "embedded" && !signer.embedded)
    return refuse("not_embedded", "This recipient was not sent as embedded: only an embedded recipient signs through a view URL");
  if (request.kind === "in_person" && !signer.hostUserId)
    return refuse("not_in_person", "This recipient was not sent to sign in person: only an in-person recipient has a host session");
  if (request.kind === "in_person" && signer.hostUserId !== request.requestedBy.userId) return { result: { kind: "not_host" }, state };
  if (TERMINAL.has(state.envelope.status)) return refuse("envelope_not_open", `The envelope is ${state.envelope.status}`);
  if (isExpired(state.envelope))
    return refuse(
      "envelope_not_open",
      "The envelope has expired",
      await end(ctx, state, "expired", "expired", { ip: null, userAgent: null }),
    );
  if (signer.status === "pending")
    return refuse("not_your_turn", "It is not this recipient's turn yet: everyone of an earlier order must be done first");
  if (!ACTIVE.has(signer.status)) return refuse("recipient_done", `The recipient has already ${signer.status}`);

  const { token, hash } = await mintToken(state.envelope.id, "ses");
  const now = Date.now();
  const expiresAt = now + request.ttlSeconds * 1000;
  // The key goes to the directory before the session is live, as a signing link's does (machine.ts write).
  await registerPublicKeys(state.tenant.directory, state.envelope.organizationId, "signing_session", [hash]);
  const { userId, name, email } = request.requestedBy;
  const data =
    request.kind === "embedded"
      ? { requestedBy: userId, frameAncestors: request.frameAncestors, expiresAt: nowIso(new Date(expiresAt)) }
      : { hostUserId: userId, host: { name, email }, expiresAt: nowIso(new Date(expiresAt)) };
  const next = await write(ctx, state, {
    audit: [entry(request.kind === "embedded" ? "view_requested" : "host_session_started", signer.id, meta, data)],
  });
  sessions.add({ ...request, tokenHash: hash, expiresAt }, now);
  return { result: { kind: "issued", token, expiresAt: nowIso(new Date(expiresAt)) }, state: next };
}

/** The first open of a live session: it is used up, and the signer gets a signing link. Anything else is gone (410). */
export async function openSession(
  env: Env,
  state: Loaded,
  sessions: SigningSessions,
  tokenHash: string,
  meta: RequestMeta,
  defer: Defer,
): Promise<{ result: OpenSessionResult; state: Loaded }> {
  const gone = (next = state) => ({ result: { kind: "gone" as const }, state: next });
  const session = sessions.get(tokenHash);
  if (!session || session.openedAt !== null || session.expiresAt <= Date.now()) return gone();
  const signer = state.signers.find((s) => s.id === session.signerId);
  if (TERMINAL.has(state.envelope.status) || !signer || !ACTIVE.has(signer.status)) return gone();
  const ctx = machineContext(env, state, defer);
  if (isExpired(state.envelope)) return gone(await end(ctx, state, "expired", "expired", { ip: null, userAgent: null }));

  const via = VIA[session.kind];
  const { token, hash } = await mintToken(state.envelope.id);
  const next = await write(ctx, state, {
    newLinks: [{ tokenHash: hash, signerId: signer.id, via }],
    audit: [entry("session_opened", signer.id, meta, { via, requestedBy: session.requestedBy.userId })],
  });
  // Marked after the write landed: a failed write leaves the session to be opened again (the object answers 503).
  sessions.markOpened(tokenHash, hash);
  return {
    result: {
      kind: "opened",
      token,
      session: { kind: session.kind, returnUrl: session.returnUrl, frameAncestors: session.frameAncestors },
      signer: { name: signer.name },
    },
    state: next,
  };
}

/** What a signature made through a session's link records (audit `signed` data): how it was made, and who asked for it. */
export function signedVia(session: Session | null): Record<string, unknown> | null {
  if (!session) return null;
  const { userId, name, email } = session.requestedBy;
  return session.kind === "embedded"
    ? { via: "embedded", requestedBy: userId }
    : { via: "in_person", hostUserId: userId, host: { name, email } };
}
