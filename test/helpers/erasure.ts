import { env } from "cloudflare:workers";
import { expect, vi } from "vitest";
import { everyShard } from "../../src/shards/bindings";
import { call, json } from "./client";
import { createContact, logActivity, logCommunication } from "./contacts";
import { createDeal, createTask } from "./deals";
import { createDocument, leaseCanonical, publicSign, sendForSignature, signAll, tokenOf } from "./documents";
import { tenantDb, type TestPrincipal } from "./factories";
import { createProperty } from "./properties";
import { newAgreement, publicAccept } from "./clickwrap";

/**
 * Where a person can still be found (issue 29): every text column of every table of the directory and of every
 * shard, and every R2 object's bytes (a PDF's text extracted too). Tables and columns come from the databases
 * themselves, so a new table is searched without a change here.
 */

/** What each kind of `retained` in an erasure's answer covers: the rows a search leaves out once the answer names the kind. */
const COMPLETED = "(SELECT id FROM envelopes WHERE status = 'completed')";
export const RETAINED_ROWS: Record<string, Record<string, string>> = {
  signed_envelopes: {
    envelopes: `id IN ${COMPLETED}`,
    envelope_signers: `envelope_id IN ${COMPLETED}`,
    envelope_audit: `envelope_id IN ${COMPLETED}`,
    documents: "id IN (SELECT document_id FROM envelopes WHERE status = 'completed')",
  },
  clickwrap_acceptances: { clickwrap_acceptances: "1" },
};

/** The most columns D1 answers in one row. */
const MAX_RESULT_COLUMNS = 100;

const databases = () => [{ label: "directory", db: env.DB }, ...everyShard(env).map(({ shard, db }) => ({ label: `shard ${shard}`, db }))];

/** Each hit as `table.column: needle (database)`, searched case-insensitively; rows of the `retained` kinds left out. */
export async function whereFound(needles: string[], retained: string[] = []): Promise<string[]> {
  const found: string[] = [];
  for (const { label, db } of databases()) {
    // Every text column of every table, in one read; then one query per table, all in one batch.
    const columns = await db
      .prepare(
        "SELECT m.name AS tbl, p.name AS col FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '_cf_%' AND m.name NOT LIKE 'd1_%' AND (p.type = '' OR p.type LIKE '%text%' OR p.type LIKE '%char%' OR p.type LIKE '%clob%') ORDER BY m.name, p.cid",
      )
      .all<{ tbl: string; col: string }>();
    const tables = new Map<string, { col: string }[]>();
    for (const c of columns.results) tables.set(c.tbl, [...(tables.get(c.tbl) ?? []), c]);
    // D1 answers at most 100 columns a row: a wide table's probes go in several statements.
    const searches = [...tables].flatMap(([name, cols]) => {
      const all = cols.flatMap(({ col }) => needles.map((needle, n) => ({ column: col, needle, n })));
      const kept = retained.flatMap((kind) => (RETAINED_ROWS[kind]?.[name] ? [RETAINED_ROWS[kind][name]] : []));
      const where = kept.length ? ` WHERE NOT (${kept.join(" OR ")})` : "";
      return Array.from({ length: Math.ceil(all.length / MAX_RESULT_COLUMNS) }, (_, k) => {
        const probes = all.slice(k * MAX_RESULT_COLUMNS, (k + 1) * MAX_RESULT_COLUMNS);
        // Each needle is bound once (?1 … ?n) and named by every column's test: D1 caps the bound parameters of a query.
        const sums = probes.map(({ column, n }, i) => `SUM(instr(lower(CAST("${column}" AS TEXT)), ?${n + 1}) > 0) AS "${i}"`);
        return {
          name,
          probes,
          statement: db.prepare(`SELECT ${sums.join(", ")} FROM "${name}"${where}`).bind(...needles.map((n) => n.toLowerCase())),
        };
      });
    });
    const results = searches.length ? await db.batch<Record<string, number | null>>(searches.map((t) => t.statement)) : [];
    searches.forEach(({ name, probes }, t) => {
      const hits = results[t]!.results[0];
      probes.forEach(({ column, needle }, i) => {
        if ((hits?.[String(i)] ?? 0) > 0) found.push(`${name}.${column}: ${needle} (${label})`);
      });
    });
  }
  return found;
}

/** The R2 keys of completed envelopes (their PDF, certificate and sealed copy): what `signed_envelopes` keeps. */
async function signedFileKeys(): Promise<(key: string) => boolean> {
  const rows = (
    await Promise.all(
      everyShard(env).map(
        async ({ db }) =>
          (
            await db
              .prepare("SELECT id, organization_id AS org FROM envelopes WHERE status = 'completed'")
              .all<{ id: string; org: string }>()
          ).results,
      ),
    )
  ).flat();
  const prefixes = rows.flatMap((r) => [`envelopes/${r.org}/${r.id}/`, `certificates/${r.org}/${r.id}.pdf`, `signed/${r.org}/${r.id}.pdf`]);
  return (key) => prefixes.some((p) => key.startsWith(p));
}

/** An object's text: its bytes as Latin-1, and a PDF's extracted text (names in an embedded font are glyph ids in the bytes). */
async function objectText(bytes: Uint8Array): Promise<string> {
  let text = new TextDecoder("latin1").decode(bytes);
  if (text.startsWith("%PDF")) {
    const { extractText, getDocumentProxy } = await import("unpdf");
    try {
      const { text: extracted } = await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: true });
      text += `\n${extracted as string}`;
    } catch {
      // Not a PDF a reader opens (a test's stub bytes): its raw bytes were searched.
    }
  }
  return text.toLowerCase();
}

/**
 * Every R2 object whose bytes or text name any needle, as `key: needle`; the files of the `retained` kinds left out.
 * With `organizationId`, only that organization's objects (every key is `<kind>/<organization>/…`): a person seeded in
 * one organization is searched for without reading every other test's files.
 */
export async function filesFound(needles: string[], retained: string[] = [], organizationId?: string): Promise<string[]> {
  const keep = retained.includes("signed_envelopes") ? await signedFileKeys() : () => false;
  const found: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ cursor, limit: 1000 });
    for (const { key } of page.objects) {
      if (keep(key) || (organizationId && key.split("/")[1] !== organizationId)) continue;
      const object = await env.FILES.get(key);
      if (!object) continue;
      const text = await objectText(new Uint8Array(await object.arrayBuffer()));
      for (const needle of needles) if (text.includes(needle.toLowerCase())) found.push(`${key}: ${needle}`);
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return found;
}

export const erase = (p: TestPrincipal, id: string, vars?: Record<string, unknown>) =>
  call("DELETE", `/v1/contacts/${id}?erase=true`, { token: p.token, vars: vars as Record<string, string> | undefined });

export interface Person {
  firstName: string;
  lastName: string;
  email: string;
  phone: string;
}

/** A person with strings found nowhere else: the needles the searches look for. */
export function newPerson(): Person & { needles: string[]; fullName: string } {
  const tag = crypto.randomUUID().slice(0, 6);
  const person = {
    firstName: `Zephyrine${tag}`,
    lastName: `Quillfeather${tag}`,
    email: `zq.${tag}@erase.test`,
    phone: `+1 416 555 ${String(Math.floor(Math.random() * 9000) + 1000)}`,
  };
  return {
    ...person,
    fullName: `${person.firstName} ${person.lastName}`,
    needles: [person.firstName, person.lastName, person.email, person.phone],
  };
}

/**
 * The person as a contact with an e-mail of theirs logged, mentioned (full name, e-mail or phone) by another contact's
 * notes, activity and SMS, a deal's
 * title, notes and task, a listing's texts and its listing sheet, and by another contact (with an activity and a voicemail)
 * and another deal that then go to the trash; and a party to an open envelope (its link mailed and opened). What each place holds is in the answer.
 */
export async function seedMentions(p: TestPrincipal, person: ReturnType<typeof newPerson>) {
  const { fullName } = person;
  const contact = await createContact(p.token, {
    firstName: person.firstName,
    lastName: person.lastName,
    email: person.email,
    phone: person.phone,
    notes: `Met ${person.firstName} at the open house`,
  });
  await logActivity(p.token, contact.id, { type: "PHONE_CALL", description: `Called ${person.firstName}` });
  await logCommunication(p.token, contact.id, {
    type: "email",
    direction: "inbound",
    subject: `From ${fullName}`,
    body: `Reply to ${person.email}`,
  });
  const neighbour = await createContact(p.token, { firstName: "Nia", lastName: "Neighbour", notes: `Knows ${fullName} from work` });
  await logActivity(p.token, neighbour.id, {
    type: "NOTE",
    description: `Introduced by ${person.email}`,
    metadata: { referredBy: fullName },
  });
  await logCommunication(p.token, neighbour.id, {
    type: "sms",
    direction: "outbound",
    body: `Did ${fullName} call you?`,
    metadata: { forwardTo: person.phone },
  });
  const deal = await createDeal(p.token, { contactId: contact.id, title: `Condo for ${fullName}`, notes: `Reach them at ${person.phone}` });
  await createTask(p.token, deal.id, { title: `Call ${fullName} about the offer` });
  const property = await createProperty(p.token, {
    marketing: {
      description: `Bright corner unit, home of ${fullName} for years.`,
      showingInstructions: `Tenant ${fullName} shows it, ${person.phone}`,
    },
  });
  // Its listing sheet, a PDF in R2, prints the description.
  expect(
    (await call("POST", `/v1/properties/${property.id}/reports`, { token: p.token, body: { reportType: "LISTING_SHEET" } })).status,
  ).toBe(201);
  // Records in the trash that name them: a restore must not bring the name back.
  const trashedContact = await createContact(p.token, { firstName: "Theo", lastName: "Trashed", notes: `Cousin of ${fullName}` });
  await logActivity(p.token, trashedContact.id, { type: "EMAIL_SENT", description: `Wrote to ${person.email}` });
  await logCommunication(p.token, trashedContact.id, { type: "voicemail", direction: "inbound", body: `Call ${fullName} back` });
  const trashedDeal = await createDeal(p.token, {
    contactId: trashedContact.id,
    title: `Referral from ${fullName}`,
    notes: `Ask ${person.email}`,
  });
  expect((await call("DELETE", `/v1/deals/${trashedDeal.id}`, { token: p.token })).status).toBe(200);
  expect((await call("DELETE", `/v1/contacts/${trashedContact.id}`, { token: p.token })).status).toBe(200);
  // An open envelope they are to sign, the link opened (audit entries with their address), its PDF in R2.
  const lease = await createDocument(p.token, leaseCanonical({ tenants: [{ name: fullName, email: person.email }] }));
  const open = await sendForSignature(p.token, lease.id);
  const openToken = tokenOf(open.links.find((l) => l.email === person.email)!.url);
  expect((await publicSign("GET", openToken)).status).toBe(200);
  return { contact, neighbour, deal, property, trashedContact, trashedDeal, lease, open, openToken };
}

/**
 * Envelopes of every ending that name the person — completed (sealed, certificate made), declined (with a reason
 * naming them), voided (the reason too), expired, open — a draft naming them never sent, a document that does not
 * name them sent to them, an acceptance of terms under their e-mail, and search vectors of each document.
 */
export async function seedSignatures(p: TestPrincipal, person: ReturnType<typeof newPerson>) {
  const { fullName } = person;
  const db = await tenantDb(p.organizationId);
  const tenant = [{ name: fullName, email: person.email }];
  const signedDoc = await createDocument(p.token, leaseCanonical({ tenants: tenant }));
  const signed = await sendForSignature(p.token, signedDoc.id);
  for (const link of signed.links) await signAll(tokenOf(link.url));
  await vi.waitFor(
    async () =>
      expect(
        await db
          .prepare("SELECT sealed_key IS NOT NULL AND certificate_key IS NOT NULL AS ready FROM envelopes WHERE id = ?")
          .bind(signed.envelopeId)
          .first(),
      ).toEqual({ ready: 1 }),
    { timeout: 20_000, interval: 100 },
  );

  const unsignedDoc = await createDocument(p.token, leaseCanonical({ tenants: tenant }));
  const linkOf = (sent: { links: { email: string; url: string }[] }) => tokenOf(sent.links.find((l) => l.email === person.email)!.url);
  const declined = await sendForSignature(p.token, unsignedDoc.id);
  expect((await publicSign("POST", linkOf(declined), { action: "decline", reason: `${fullName} found another place` })).status).toBe(200);
  const voided = await sendForSignature(p.token, unsignedDoc.id);
  expect(
    (
      await call("DELETE", `/api/signatures/${voided.envelopeId}?reason=${encodeURIComponent(`${fullName} asked to wait`)}`, {
        token: p.token,
      })
    ).status,
  ).toBe(200);
  const expired = await sendForSignature(p.token, unsignedDoc.id, { expiresInDays: 1 });
  await db
    .prepare("UPDATE envelopes SET expires_at = ? WHERE id = ?")
    .bind(new Date(Date.now() - 1000).toISOString(), expired.envelopeId)
    .run();
  expect((await publicSign("GET", linkOf(expired))).status).toBe(404);
  const open = await sendForSignature(p.token, unsignedDoc.id);

  const draft = await createDocument(p.token, {
    schemaVersion: 1,
    formKey: "generic/free-form",
    title: "Notes",
    body: `Tenant: ${fullName}, ${person.phone}`,
    provenance: { aiDrafted: false },
  });
  // A document about others, sent to the person to sign: the envelope names them, the document does not.
  const othersDoc = await createDocument(p.token, leaseCanonical());
  const sentToThem = await sendForSignature(p.token, othersDoc.id, {
    signers: [{ name: fullName, email: person.email, role: "Guarantor" }],
  });

  for (const id of [signedDoc.id, unsignedDoc.id, draft.id, othersDoc.id]) {
    await db
      .prepare(
        "INSERT INTO document_vectors (organization_id, id, document_id, chunk, vector, indexed_at) VALUES (?, ?, ?, 0, X'0000803F', ?)",
      )
      .bind(p.organizationId, `${id}#0`, id, new Date().toISOString())
      .run();
  }
  const agreement = await newAgreement(p);
  expect((await publicAccept(agreement.id, { versionHash: agreement.versionHash, subjectRef: person.email })).status).toBe(200);
  const status = async (id: string) =>
    (await db.prepare("SELECT status FROM envelopes WHERE id = ?").bind(id).first<{ status: string }>())?.status;
  expect([
    await status(signed.envelopeId),
    await status(declined.envelopeId),
    await status(voided.envelopeId),
    await status(expired.envelopeId),
    await status(open.envelopeId),
  ]).toEqual(["completed", "declined", "voided", "expired", "partially_signed"]);
  return {
    signed,
    signedDoc,
    unsignedDoc,
    draft,
    othersDoc,
    unsigned: [declined, voided, expired, open, sentToThem].map((s) => s.envelopeId),
    openTokens: [linkOf(open), linkOf(sentToThem)],
  };
}

export const answerOf = async (res: Response) => (await json(res)).data;
