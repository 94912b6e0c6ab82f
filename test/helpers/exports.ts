import { tenantDb } from "./factories";

// Exports (issue 33 part 5): seeding many rows fast, and reading an export back.

/**
 * Seeds `n` contacts in SQL itself (a recursive CTE), with addresses on every other one, tags on every tenth and a
 * note with a comma and a quote on every third, so the CSV's quoting and dotted columns are exercised. The rows the
 * API writes beside a contact (its counter, its tags' rows) are written too, so lists and exports agree.
 */
export async function seedContacts(organizationId: string, n: number, prefix = "Seed"): Promise<void> {
  const base = Date.UTC(2025, 0, 1);
  const db = await tenantDb(organizationId);
  const CHUNK = 10_000;
  const chunks = Array.from({ length: Math.ceil(n / CHUNK) }, (_, i) => i * CHUNK);
  await db.batch([
    ...chunks.map((from) =>
      db
        .prepare(
          `INSERT INTO contacts (id, organization_id, first_name, last_name, email, email_key, phone, address, type, status, source, lead_score, tags, notes, created_at, updated_at)
           WITH RECURSIVE seq(n) AS (SELECT CAST(?4 AS INTEGER) UNION ALL SELECT n + 1 FROM seq WHERE n < min(?4 + ${CHUNK}, ?2) - 1)
           SELECT lower(hex(randomblob(16))), ?1, ?5 || n, 'Last' || (n * 7919 % ?2), lower(?5) || n || '.' || ?1 || '@export.test', lower(?5) || n || '.' || ?1 || '@export.test',
                  '+1416555' || printf('%04d', n % 10000),
                  CASE n % 2 WHEN 0 THEN json_object('street', n || ' Elm St', 'city', 'Toronto', 'state', 'ON', 'zipCode', 'M5V ' || (n % 100), 'country', 'CA') END,
                  CASE n % 5 WHEN 0 THEN 'LEAD' WHEN 1 THEN 'CLIENT' WHEN 2 THEN 'PAST_CLIENT' WHEN 3 THEN 'REFERRAL' ELSE 'VENDOR' END,
                  'ACTIVE', 'WEBSITE', n % 101,
                  CASE n % 10 WHEN 0 THEN '["vip","buyer"]' ELSE '[]' END,
                  CASE n % 3 WHEN 0 THEN 'Called about Elm ' || n || ', said "soon"' END,
                  strftime('%Y-%m-%dT%H:%M:%fZ', ?3 / 1000, 'unixepoch', '+' || n || ' seconds'),
                  strftime('%Y-%m-%dT%H:%M:%fZ', ?3 / 1000, 'unixepoch', '+' || n || ' seconds')
           FROM seq`,
        )
        .bind(organizationId, n, base, from, prefix),
    ),
    db
      .prepare(
        `INSERT INTO contact_tags (contact_id, organization_id, tag) SELECT c.id, c.organization_id, j.value FROM contacts c, json_each(c.tags) j WHERE c.organization_id = ?`,
      )
      .bind(organizationId),
    db
      .prepare(
        "INSERT INTO resource_counters (organization_id, resource, total, version) VALUES (?, 'contacts', ?, 1) ON CONFLICT DO UPDATE SET total = total + excluded.total, version = version + 1",
      )
      .bind(organizationId, n),
    db
      .prepare(
        `INSERT INTO contact_facet_counts (organization_id, type, status, source, assigned_to, total)
       SELECT organization_id, type, status, IFNULL(source, ''), IFNULL(assigned_to, ''), COUNT(*) FROM contacts WHERE organization_id = ?
       GROUP BY type, status, IFNULL(source, ''), IFNULL(assigned_to, '')
       ON CONFLICT DO UPDATE SET total = excluded.total`,
      )
      .bind(organizationId),
  ]);
}

/** RFC 4180 CSV into rows of fields (quoted fields may hold commas, quotes and line breaks). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") row.push(field), (field = "");
    else if (ch === "\r" && text[i + 1] === "\n") {
      row.push(field), rows.push(row), (row = []), (field = ""), i++;
    } else field += ch;
  }
  if (field || row.length) row.push(field), rows.push(row);
  return rows;
}

/** CSV rows as objects keyed by the header. */
export function csvObjects(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  return rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i] ?? ""])));
}

export const ndjsonObjects = (text: string): Record<string, any>[] =>
  text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
