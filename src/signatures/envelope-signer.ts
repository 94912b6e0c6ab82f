import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { OrganizationMoving } from "../lib/errors";
import { createLogger, loggableError } from "../lib/log";
import type { RequestMeta } from "../service-context";
import type { ActResult, OpenResult } from "./actions";
import { SignerCodes } from "./codes";
import type { Loaded } from "./machine";
import type { ResendResult } from "./resend";
import type { SignerAction } from "./schemas";
import { SigningSessions } from "./session-store";
import type { IssueResult, OpenSessionResult, SessionRequest } from "./session-transitions";

/**
 * The transitions and what they reach (the shards through drizzle, the directory, mail), loaded at the object's first
 * call rather than at startup: every isolate of the Worker loads this class, most never call it.
 */
async function loadTransitions() {
  const [actions, machine, reminders, resend, sessionTransitions, tenants, write] = await Promise.all([
    import("./actions"),
    import("./machine"),
    import("./reminders"),
    import("./resend"),
    import("./session-transitions"),
    import("../shards/tenants"),
    import("../db/write"),
  ]);
  return { actions, machine, reminders, resend, sessionTransitions, tenants, write };
}
type Transitions = Awaited<ReturnType<typeof loadTransitions>>;
/** The transitions once loaded, shared by every object of the isolate (a value: nothing pending is ever shared). */
let loaded: Transitions | undefined;

export type VoidResult = { kind: "voided" } | { kind: "not_found" } | { kind: "cannot_void"; message: string };

/**
 * One object per envelope id serializes every transition of that envelope (DESIGN.md "Serialization",
 * docs/decisions/0010-one-signing-object-per-envelope.md). An awaited D1 call opens the object's input gate, so every
 * transition runs in an explicit queue (a promise chain), and its D1 write stays a compare-and-set on the envelope's
 * version as a second guard.
 *
 * The object keeps the envelope's state (row, signers, live links, audit head) in memory after its first load and
 * moves it with each write it makes, so a transition costs one D1 round trip, the write itself. D1 stays the source of
 * truth: a write from a state D1 has moved past fails its guard, and the object reloads and runs the call again; an
 * evicted object loads once more. One-time codes live in the object's own storage (codes.ts).
 *
 * The envelope's rows live on its organization's shard: every call names the organization (the public
 * routes learn it from the link's key in the directory), the object keeps it for its alarm, and a load finds the
 * shard through the directory. An envelope that is not that organization's is unknown to the call.
 */
/** What the object answers while a shard move fences the organization's writes (the caller answers 503). */
const MOVING = { kind: "moving" } as const;
/**
 * What the object answers when a step of a transition failed (a D1 read or write refused, or its answer lost; issue
 * 29): nothing is assumed done, the state is reloaded from D1 at the next call, and the caller answers 503 so the
 * signer tries again. A result rather than a throw: a rejected call leaves the object as an uncaught error.
 */
const FAILED = { kind: "failed" } as const;

export class EnvelopeSigner extends DurableObject<Env> {
  private tail: Promise<unknown> = Promise.resolve();
  private state: Loaded | null = null;
  private organizationId: string | null = null;
  /** Tokens that died (they never revive): a call that can only be "gone" is answered without reading anything. */
  private readonly deadTokens = new Set<string>();
  private readonly codes: SignerCodes;
  private readonly sessions: SigningSessions;
  private transitions: Promise<Transitions> | undefined;

  /** Loads the transitions ahead of any call (the test setup does, before objects run side by side). */
  static async loadTransitions(): Promise<void> {
    loaded ??= await loadTransitions();
  }

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.codes = new SignerCodes(ctx.storage.sql);
    this.sessions = new SigningSessions(ctx.storage.sql);
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work, work);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private readonly defer = (work: Promise<unknown>) => this.ctx.waitUntil(work);

  /**
   * The envelope from its organization's shard; null when the directory knows no such organization or it has no such
   * envelope. A caller that looked the organization up already (a public route, by the link's key) names its shard,
   * so the load reads nothing in the directory; the others (the sender's routes, the cron, the alarm) leave it to it.
   */
  private async load(t: Transitions, envelopeId: string, organizationId: string, shard?: number): Promise<Loaded | null> {
    const tenant = shard === undefined ? await t.tenants.tenantOf(this.env, organizationId) : t.tenants.openShardOf(this.env, shard);
    const s = tenant && (await t.machine.loadEnvelope(tenant, envelopeId));
    return s && s.envelope.organizationId === organizationId ? s : null;
  }

  /** Remembers the organization for the alarm, which is called with nothing (an object made before it was kept learns it here). */
  private async keepOrganization(organizationId: string): Promise<void> {
    if (this.organizationId === organizationId) return;
    this.organizationId = organizationId;
    await this.ctx.storage.put("organizationId", organizationId);
  }

  /**
   * Runs `op` on the envelope's state, in turn; a lost compare-and-set reloads and runs it again. Null: no such
   * envelope in that organization. MOVING: a shard move fences the organization's writes. FAILED: a step
   * failed otherwise. Both are answered as results rather than thrown out of the object, so the caller answers 503
   * and the runtime logs no uncaught error.
   */
  private withState<T>(
    envelopeId: string,
    organizationId: string,
    op: (s: Loaded, t: Transitions) => Promise<{ result: T; state: Loaded }>,
    fresh = false,
    shard?: number,
  ): Promise<T | typeof MOVING | typeof FAILED | null> {
    return this.serial(async () => {
      // Once loaded, a value for every object; until then a load per object, awaited only by this object's own calls.
      const t = loaded ?? (await (this.transitions ??= loadTransitions().then((t) => (loaded ??= t))));
      for (let attempt = 1; ; attempt++) {
        try {
          const cached = !fresh && attempt === 1 && this.state?.envelope.id === envelopeId ? this.state : null;
          if (cached && cached.envelope.organizationId !== organizationId) return null;
          const s = cached ?? (await this.load(t, envelopeId, organizationId, shard));
          if (!s) return null;
          if (!cached) await this.keepOrganization(organizationId);
          this.state = s;
          const out = await op(s, t);
          this.state = out.state;
          return out.result;
        } catch (err) {
          this.state = null;
          if (OrganizationMoving.raisedBy(err)) return MOVING;
          if (err instanceof t.write.StaleWrite && attempt < 3) continue;
          createLogger().error("envelope transition failed; the caller answers 503", { envelopeId, error: loggableError(err) });
          return FAILED;
        }
      }
    });
  }

  /** Called when the envelope is created: remembers it and its organization, and sets the expiry alarm. */
  async begin(envelopeId: string, organizationId: string, expiresAt: string | null): Promise<void> {
    await this.ctx.storage.put({ envelopeId, organizationId });
    this.organizationId = organizationId;
    if (expiresAt) await this.ctx.storage.setAlarm(new Date(expiresAt).getTime());
  }

  /**
   * `unknown`: no envelope has this id (the route then looks the token up as a link minted before ids were carried).
   * `shard`: where the route found the organization by the link's key (one directory read per public call).
   */
  async open(
    envelopeId: string,
    organizationId: string,
    shard: number,
    tokenHash: string,
    meta: RequestMeta,
  ): Promise<OpenResult | { kind: "unknown" } | typeof MOVING | typeof FAILED> {
    if (this.deadTokens.has(tokenHash)) return { kind: "gone" };
    const result = await this.withState(
      envelopeId,
      organizationId,
      (s, t) => t.actions.openLink(this.env, s, tokenHash, meta, this.defer),
      false,
      shard,
    );
    if (result?.kind === "gone") this.deadTokens.add(tokenHash);
    return result ?? { kind: "unknown" };
  }

  async act(
    envelopeId: string,
    organizationId: string,
    shard: number,
    tokenHash: string,
    input: SignerAction,
    meta: RequestMeta,
  ): Promise<ActResult | { kind: "unknown" } | typeof MOVING | typeof FAILED> {
    if (this.deadTokens.has(tokenHash)) return { kind: "gone" };
    // Checked again in turn: calls that queued behind the one that killed this token answer without any work.
    const result = await this.withState(
      envelopeId,
      organizationId,
      async (s, t) =>
        this.deadTokens.has(tokenHash)
          ? { result: { kind: "gone" as const }, state: s }
          : t.actions.act(
              this.env,
              s,
              this.codes,
              tokenHash,
              input,
              meta,
              this.defer,
              t.sessionTransitions.signedVia(this.sessions.byLink(tokenHash)),
            ),
      false,
      shard,
    );
    if (result?.kind === "gone" || (result?.kind === "done" && ["sign", "decline", "approve", "reject"].includes(input.action)))
      this.deadTokens.add(tokenHash);
    return result ?? { kind: "unknown" };
  }

  async void(
    envelopeId: string,
    organizationId: string,
    reason: string,
    actorUserId: string | null,
    meta: RequestMeta,
  ): Promise<VoidResult | typeof MOVING | typeof FAILED> {
    const result = await this.withState<VoidResult>(envelopeId, organizationId, async (s, t) => {
      const { end, isExpired, machineContext, TERMINAL } = t.machine;
      const ctx = machineContext(this.env, s, this.defer, { type: "user", userId: actorUserId });
      if (!TERMINAL.has(s.envelope.status) && isExpired(s.envelope)) {
        return {
          result: { kind: "cannot_void", message: "The envelope has expired" },
          state: await end(ctx, s, "expired", "expired", { ip: null, userAgent: null }),
        };
      }
      if (TERMINAL.has(s.envelope.status))
        return { result: { kind: "cannot_void", message: `The envelope is already ${s.envelope.status}` }, state: s };
      return { result: { kind: "voided" }, state: await end(ctx, s, "voided", reason, meta) };
    });
    if (result?.kind === "moving" || result?.kind === "failed") return result;
    if (result?.kind !== "not_found") this.codes.forget(this.state?.signers.map((s) => s.id) ?? []);
    return result ?? { kind: "not_found" };
  }

  /** A new link for one signer, from the sender (resend.ts); unlocks the signer's code verification. */
  async resend(
    envelopeId: string,
    organizationId: string,
    signerId: string,
    actorUserId: string | null,
    meta: RequestMeta,
  ): Promise<ResendResult | typeof MOVING | typeof FAILED> {
    const result = await this.withState(envelopeId, organizationId, (s, t) =>
      t.resend.resendLink(this.env, s, this.codes, signerId, actorUserId, meta, this.defer),
    );
    return result ?? { kind: "not_found" };
  }

  /** A single-use signing session for one recipient (issue 45: an embedded view URL, a host session); session-transitions.ts. */
  async startSession(
    envelopeId: string,
    organizationId: string,
    request: SessionRequest,
    meta: RequestMeta,
  ): Promise<IssueResult | typeof MOVING | typeof FAILED> {
    const result = await this.withState(envelopeId, organizationId, (s, t) =>
      t.sessionTransitions.issueSession(this.env, s, this.sessions, request, meta, this.defer),
    );
    return result ?? { kind: "not_found" };
  }

  /** The first open of a session, at most once however many race (they queue here); any other open is gone. */
  async openSession(
    envelopeId: string,
    organizationId: string,
    shard: number,
    tokenHash: string,
    meta: RequestMeta,
  ): Promise<OpenSessionResult | typeof MOVING | typeof FAILED> {
    // A used or unknown session is answered without loading the envelope.
    const known = this.sessions.get(tokenHash);
    if (!known || known.openedAt !== null) return { kind: "gone" };
    const result = await this.withState(
      envelopeId,
      organizationId,
      (s, t) => t.sessionTransitions.openSession(this.env, s, this.sessions, tokenHash, meta, this.defer),
      false,
      shard,
    );
    return result ?? { kind: "gone" };
  }

  /**
   * The cron's sweep (sweeps.ts): an envelope past its expiry at the pass's time `at` (ISO; DESIGN.md contract 12) that
   * its alarm never ended (the call after creation failed) is expired now, in this object's queue; one not due yet gets
   * its alarm. The ids are kept so that alarm finds the envelope.
   */
  async expireDue(envelopeId: string, organizationId: string, at: string): Promise<void> {
    await this.ctx.storage.put({ envelopeId, organizationId });
    this.organizationId = organizationId;
    const later = await this.withState(
      envelopeId,
      organizationId,
      (s, t) => t.machine.expireIfDue(this.env, s, this.defer, new Date(at)).then(({ later, state }) => ({ result: later, state })),
      true,
    );
    // Moving or failed: the next pass tries again.
    if (typeof later === "string") await this.ctx.storage.setAlarm(new Date(later).getTime());
  }

  /** The cron's call: mails the reminders and expiry notice that are due at the pass's time `at` (ISO), once (reminders.ts). */
  async remind(envelopeId: string, organizationId: string, at?: string): Promise<number> {
    const now = at === undefined ? new Date() : new Date(at);
    const mailed = await this.withState(
      envelopeId,
      organizationId,
      (s, t) => t.reminders.mailDueNotices(this.env, s, this.defer, now).then(({ mailed, state }) => ({ result: mailed, state })),
      true,
    );
    // Moving or failed: the next cron pass mails them (from the new shard).
    return typeof mailed === "number" ? mailed : 0;
  }

  override async alarm(): Promise<void> {
    const { envelopeId, organizationId } = Object.fromEntries(
      await this.ctx.storage.get<string>(["envelopeId", "organizationId"]),
    ) as Record<string, string | undefined>;
    // Without its organization the object cannot find the envelope's shard; the cron's sweep hands it over (sweeps.ts).
    if (!envelopeId || !organizationId) return;
    // Read afresh: the alarm is rare, and must see an expiry changed in D1 since the object last looked.
    const later = await this.withState(
      envelopeId,
      organizationId,
      (s, t) => t.machine.expireIfDue(this.env, s, this.defer).then(({ later, state }) => ({ result: later, state })),
      true,
    );
    // Moving or failed: the expiry is tried again in a minute, on whichever shard the organization lives on by then.
    if (typeof later === "object" && later !== null) await this.ctx.storage.setAlarm(Date.now() + 60_000);
    else if (later) await this.ctx.storage.setAlarm(new Date(later).getTime());
  }
}
