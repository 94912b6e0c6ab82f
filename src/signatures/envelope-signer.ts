import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { act, type ActResult, expireIfDue, openLink, type OpenResult, type RequestMeta, voidEnvelope, type VoidResult } from "./machine";
import type { SignerAction } from "./schemas";

/**
 * One object per envelope id serializes every transition of that envelope (DESIGN.md "Serialization"). An awaited D1
 * call opens the object's input gate, so another call could run in between; every transition therefore runs in an
 * explicit queue (a promise chain), one after another, and its D1 write stays conditional (machine.ts) as a second
 * guard. The object keeps only the envelope id and an alarm at the envelope's expiry.
 */
export class EnvelopeSigner extends DurableObject<Env> {
  private tail: Promise<unknown> = Promise.resolve();
  /**
   * What this object has learned for good: the envelope ended (it never resumes), and tokens that died (they never
   * revive). A call that can only be "gone" is answered from here, without reading D1; 49 losers of a 50-way race on
   * the last signature then wait microseconds, not one D1 read each. Lost on eviction: D1 stays the source of truth.
   */
  private ended = false;
  private readonly deadTokens = new Set<string>();

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work, work);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private readonly defer = (work: Promise<unknown>) => this.ctx.waitUntil(work);

  /** Called when the envelope is created: remembers it, and sets the expiry alarm when it expires. */
  async begin(envelopeId: string, expiresAt: string | null): Promise<void> {
    await this.ctx.storage.put("envelopeId", envelopeId);
    if (expiresAt) await this.ctx.storage.setAlarm(new Date(expiresAt).getTime());
  }

  private known(tokenHash: string): boolean {
    return this.ended || this.deadTokens.has(tokenHash);
  }

  open(envelopeId: string, tokenHash: string, meta: RequestMeta): Promise<OpenResult> {
    return this.serial(async () => {
      if (this.known(tokenHash)) return { kind: "gone" };
      const result = await openLink(this.env, envelopeId, tokenHash, meta, this.defer);
      if (result.kind === "gone") this.deadTokens.add(tokenHash);
      return result;
    });
  }

  act(envelopeId: string, tokenHash: string, input: SignerAction, meta: RequestMeta): Promise<ActResult> {
    return this.serial(async () => {
      if (this.known(tokenHash)) return { kind: "gone" };
      const result = await act(this.env, envelopeId, tokenHash, input, meta, this.defer);
      if (result.kind === "gone" || (result.kind === "done" && (input.action === "sign" || input.action === "decline"))) this.deadTokens.add(tokenHash);
      if (result.kind === "done" && (result.completed || input.action === "decline")) this.ended = true;
      return result;
    });
  }

  void(envelopeId: string, organizationId: string, reason: string, actorUserId: string | null, meta: RequestMeta): Promise<VoidResult> {
    return this.serial(async () => {
      const result = await voidEnvelope(this.env, envelopeId, organizationId, reason, actorUserId, meta, this.defer);
      if (result.kind !== "not_found") this.ended = true;
      return result;
    });
  }

  override async alarm(): Promise<void> {
    const envelopeId = await this.ctx.storage.get<string>("envelopeId");
    if (!envelopeId) return;
    const later = await this.serial(() => expireIfDue(this.env, envelopeId, this.defer));
    if (later) await this.ctx.storage.setAlarm(new Date(later).getTime());
    else this.ended = true;
  }
}

/** The object of one envelope. */
export const envelopeSigner = (env: Env, envelopeId: string) => env.ENVELOPE_SIGNER.get(env.ENVELOPE_SIGNER.idFromName(envelopeId));
