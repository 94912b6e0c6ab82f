import type { ReminderPlan } from "../db/signatures";
import type { Env } from "../env";
import { addSeconds, nowIso } from "../lib/time";
import type { AuditEvent } from "./audit";
import { unmailed } from "./hosted-recipients";
import { mintToken, sendSigningLink } from "./links";
import { ACTIVE, entry, type Loaded, machineContext, type SignerRow, TERMINAL, write } from "./machine";

/**
 * Reminders and expiry notices. An envelope sent with `reminders: {firstAfterDays, everyDays}` gives each
 * signer a `remindAt` when their link is sent; the minute cron hands every envelope with a due reminder or notice to
 * its object, which mails them and records each in the audit trail in one write that moves `remindAt` on. The object
 * runs one call at a time and the write is a compare-and-set, so overlapping cron passes mail each due reminder once;
 * a terminal envelope has no `remindAt` left (machine.ts), so nothing is mailed after it ends.
 */
export const MAX_REMINDERS_PER_SIGNER = 10;
const DAY_SECONDS = 86_400;

/** When a signer whose link went out at `from` is next reminded, after `sent` reminders; null when no more. */
export function nextReminderAt(plan: ReminderPlan | null, from: Date, sent: number): string | null {
  if (!plan || sent >= MAX_REMINDERS_PER_SIGNER) return null;
  if (sent === 0) return nowIso(addSeconds(from, plan.firstAfterDays * DAY_SECONDS));
  return plan.everyDays ? nowIso(addSeconds(from, plan.everyDays * DAY_SECONDS)) : null;
}

/** When the signers are told the envelope expires tomorrow: a day before, for envelopes that last at least two days. */
export function expiryNoticeAt(createdAt: Date, expiresAt: string | null): string | null {
  if (!expiresAt) return null;
  const at = Date.parse(expiresAt) - DAY_SECONDS * 1000;
  return at - createdAt.getTime() >= DAY_SECONDS * 1000 ? new Date(at).toISOString() : null;
}

/** Signers still to sign whose turn it is: the ones the cron reminds and warns of expiry (never one signing embedded or in person). */
const waiting = (state: Loaded) => state.signers.filter((s) => ACTIVE.has(s.status) && !unmailed(s));

/** Link-carrying notices: one new link per signer, each recorded in the audit trail as `event`. */
async function noticeLinks(state: Loaded, signers: SignerRow[], event: AuditEvent) {
  const minted = await Promise.all(signers.map(async (s) => ({ signer: s, ...(await mintToken(state.envelope.id)) })));
  return {
    newLinks: minted.map((m) => ({ tokenHash: m.hash, signerId: m.signer.id })),
    audit: minted.map((m) => entry(event, m.signer.id, { ip: null, userAgent: null })),
    minted,
  };
}

/** In the envelope's object: the reminders and the expiry notice that are due now, mailed once. */
export async function mailDueNotices(
  env: Env,
  state: Loaded,
  defer: (w: Promise<unknown>) => void,
  now = new Date(),
): Promise<{ mailed: number; state: Loaded }> {
  if (TERMINAL.has(state.envelope.status)) return { mailed: 0, state };
  const at = nowIso(now);
  const pending = waiting(state);
  const due = pending.filter((s) => s.remindAt !== null && s.remindAt <= at);
  const notice =
    state.envelope.expiryNoticeAt !== null &&
    state.envelope.expiryNoticeAt <= at &&
    state.envelope.expiresAt !== null &&
    state.envelope.expiresAt > at;
  const clearNotice = state.envelope.expiryNoticeAt !== null && state.envelope.expiryNoticeAt <= at;
  if (due.length === 0 && !clearNotice) return { mailed: 0, state };

  const reminders = await noticeLinks(state, due, "reminded");
  const notices = notice ? await noticeLinks(state, pending, "expiry_notice") : { newLinks: [], audit: [], minted: [] };
  const linksOf = (id: string) => state.links.filter((l) => l.signerId === id).length;
  const next = await write(machineContext(env, state, defer), state, {
    ...(clearNotice ? { envelope: { expiryNoticeAt: null } } : {}),
    // A cron that was down for days reminds once, then keeps the rhythm from now.
    signers: due.map((s) => ({
      id: s.id,
      from: s.status,
      set: { remindAt: nextReminderAt(state.envelope.reminders, now, linksOf(s.id)) },
    })),
    newLinks: [...reminders.newLinks, ...notices.newLinks],
    audit: [...reminders.audit, ...notices.audit],
  });
  for (const m of reminders.minted)
    defer(sendSigningLink(env, state.tenant.db, state.envelope.organizationId, m.signer, m.token, "reminder"));
  for (const m of notices.minted)
    defer(
      sendSigningLink(env, state.tenant.db, state.envelope.organizationId, m.signer, m.token, "expiry_notice", state.envelope.expiresAt),
    );
  return { mailed: reminders.minted.length + notices.minted.length, state: next };
}
