import { env } from "cloudflare:workers";
import ICAL from "ical.js";
import { expect, vi } from "vitest";
import { appointmentInvitationConsumer } from "../../src/appointments/invitations";
import { createDb } from "../../src/db/client";
import type { DomainEvent } from "../../src/events/event";
import { dispatchEvents } from "../../src/events/consumers";
import { decryptText } from "../../src/lib/secret-box";
import { MAIL_LOG_PURPOSE, type MailAttachment, readLoggedBody } from "../../src/mail/mailer";
import { call, json } from "./client";
import { allOnShards } from "./documents";
import { tenantDb } from "./factories";

export type AppointmentJson = Record<string, any> & { id: string; sequence: number; attendees: Record<string, any>[] };

export function appointmentBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "buyer_consultation",
    startsAt: "2027-03-15T18:00:00Z",
    endsAt: "2027-03-15T19:00:00Z",
    timeZone: "America/New_York",
    location: "Office, 1 Main St",
    ...overrides,
  };
}

export async function createAppointment(token: string, overrides: Record<string, unknown> = {}): Promise<AppointmentJson> {
  const res = await call("POST", "/v1/appointments", { token, body: appointmentBody(overrides) });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data;
}

export async function patchAppointment(token: string, id: string, body: Record<string, unknown>): Promise<AppointmentJson> {
  const res = await call("PATCH", `/v1/appointments/${id}`, { token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  return payload.data;
}

/** The organization's outbox events of `types`, as stored. */
export async function storedEvents(organizationId: string, types: string[]): Promise<DomainEvent[]> {
  const { results } = await (await tenantDb(organizationId))
    .prepare(
      `SELECT id, type, organization_id AS organizationId, actor, occurred_at AS occurredAt, data FROM outbox_events
       WHERE organization_id = ? AND type IN (SELECT value FROM json_each(?)) ORDER BY occurred_at, rowid`,
    )
    .bind(organizationId, JSON.stringify(types))
    .all<Record<string, string>>();
  return results.map((r) => ({ ...r, actor: JSON.parse(r.actor!), data: JSON.parse(r.data!) }) as unknown as DomainEvent);
}

/**
 * Runs the invitation consumer on the organization's appointment events, through the dispatcher (claims per event id),
 * until none is left to retry: the test pool's own queue consumer may be handling the same events beside it (an
 * event it holds answers "busy"), and that is a redelivery too.
 */
export async function deliverInvitations(organizationId: string): Promise<void> {
  const events = await storedEvents(organizationId, ["appointment.created", "appointment.updated", "appointment.cancelled"]);
  const db = createDb(await tenantDb(organizationId));
  await vi.waitFor(async () => expect([...(await dispatchEvents([appointmentInvitationConsumer], events, env, db))]).toEqual([]), {
    timeout: 10_000,
    interval: 50,
  });
}

export interface KeptMail {
  id: string;
  subject: string;
  text: string;
  attachments: MailAttachment[];
}

/** Messages the `log` mail provider kept for `to`, oldest first, with their attachments. */
export async function mailWithAttachments(to: string): Promise<KeptMail[]> {
  const rows = await allOnShards<{ id: string; subject: string; body: string; sealed: number; created_at: string }>(
    'SELECT id, subject, body, sealed, created_at FROM mail_outbox WHERE "to" = ? ORDER BY created_at, rowid',
    to,
  );
  rows.sort((a, b) => a.created_at.localeCompare(b.created_at));
  return Promise.all(
    rows.map(async (r) => {
      const plain = r.sealed ? await decryptText(env.MAIL_LOG_KEY!, MAIL_LOG_PURPOSE, r.id, r.body) : r.body;
      const { text, attachments } = readLoggedBody(plain);
      return { id: r.id, subject: r.subject, text, attachments: attachments ?? [] };
    }),
  );
}

const encoder = new TextEncoder();

/**
 * An iCalendar text parsed by ical.js, after the checks of its lines a parser forgives: CRLF endings everywhere and no
 * line over 75 octets (RFC 5545 §3.1).
 */
export function parseIcal(text: string): ICAL.Component {
  expect(text.endsWith("\r\n")).toBe(true);
  const lines = text.slice(0, -2).split("\r\n");
  for (const line of lines) {
    expect(line).not.toMatch(/[\r\n]/);
    expect(encoder.encode(line).length, line).toBeLessThanOrEqual(75);
  }
  return new ICAL.Component(ICAL.parse(text));
}

export { ICAL };
