import { countOf, filterKey, resolveTotal, totalStatements } from "../crm/list-totals";
import { NAME_ZIP_KEY_SQL } from "../db/schema";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { Validation } from "../lib/errors";
import type { ServiceContext } from "../service-context";
import { DUPLICATE_REASONS, type DuplicateGroup, type DuplicateReason, type DuplicatesQuery } from "./schemas";

/**
 * GET /v1/contacts/duplicates: groups of live contacts that are likely one person, those sharing a phone
 * (its E.164 key, in either phone field, in any combination) and those sharing first and last name and zip code;
 * phone groups first, each kind in key order. E-mails are unique per organization (emailKey), so no two contacts
 * share one. Each page reads at most WINDOW entries of each key's index from the cursor on, so its cost is bounded
 * whatever the organization's size; a page may therefore hold fewer than `limit` groups while `hasMore` is true.
 */
export const WINDOW = 2000;
/** Contacts shown per group (`contactCount` says how many share the key). */
export const GROUP_CONTACTS = 20;

const KEY_COLUMNS: Record<DuplicateReason, string[]> = { phone: ["phone_key", "secondary_phone_key"], name_zip: [NAME_ZIP_KEY_SQL] };
const SORT = "duplicates";

interface Start {
  key: string;
  /** Whether a group with exactly `key` is still to be listed. */
  inclusive: boolean;
}

/** SQLite's order of text (UTF-8 bytes, that is code points), which JS's `<` is not beyond the BMP. */
const before = (a: string, b: string): boolean => {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]!.codePointAt(0)! < y[i]!.codePointAt(0)!;
  return x.length < y.length;
};

/**
 * Which keys of a page are groups, from the index entries read (one sorted list per key column, each at most `window`
 * long, all at or after `start`): the keys seen at least twice up to where every list is complete (a full list may stop
 * inside its last key), at most `limit` of them, and where the next page starts (null: nothing is left).
 */
export function planPage(lists: string[][], window: number, start: Start, limit: number): { keys: string[]; next: Start | null } {
  let bound: string | null = null;
  for (const l of lists) if (l.length >= window && (bound === null || before(l.at(-1)!, bound))) bound = l.at(-1)!;
  if (bound !== null && start.inclusive && bound === start.key) {
    // A whole window of one key: that key is a group (a window's entries are distinct contacts); go on after it.
    return { keys: [start.key], next: { key: start.key, inclusive: false } };
  }
  const seen = new Map<string, number>();
  for (const l of lists) for (const k of l) seen.set(k, (seen.get(k) ?? 0) + 1);
  const keys = [...seen]
    .filter(([k, n]) => n > 1 && (bound === null || before(k, bound)))
    .map(([k]) => k)
    .sort((a, b) => (a === b ? 0 : before(a, b) ? -1 : 1));
  if (keys.length > limit) return { keys: keys.slice(0, limit), next: { key: keys[limit - 1]!, inclusive: false } };
  return { keys, next: bound === null ? null : { key: bound, inclusive: true } };
}

function startOf(cursor: string | undefined, reasons: readonly DuplicateReason[]): { reason: DuplicateReason; start: Start } {
  if (!cursor) return { reason: reasons[0]!, start: { key: "", inclusive: true } };
  const { values, id } = decodeCursor(cursor, SORT, 2);
  const [reason, inclusive] = values;
  if (!reasons.includes(reason as DuplicateReason) || (inclusive !== 0 && inclusive !== 1)) {
    throw new Validation([
      {
        field: "cursor",
        path: ["cursor"],
        code: "invalid_cursor",
        message: "Cursor was issued for another reason filter; start again without a cursor",
      },
    ]);
  }
  return { reason: reason as DuplicateReason, start: { key: id, inclusive: inclusive === 1 } };
}

/** The groups of the keys, each with its first GROUP_CONTACTS contacts by id and how many share it, in one query. */
async function groupsOf(ctx: ServiceContext, reason: DuplicateReason, keys: string[]): Promise<DuplicateGroup[]> {
  if (keys.length === 0) return [];
  const list = JSON.stringify(keys);
  const union = KEY_COLUMNS[reason]
    .map(
      (c) =>
        `SELECT ${c} AS k, id, first_name, last_name, email, phone, secondary_phone, created_at FROM contacts WHERE organization_id = ? AND ${c} IN (SELECT value FROM json_each(?))`,
    )
    .join(" UNION ");
  const rows = await ctx.d1
    .prepare(
      `SELECT * FROM (SELECT u.*, row_number() OVER (PARTITION BY k ORDER BY id) AS rn, COUNT(*) OVER (PARTITION BY k) AS n FROM (${union}) u) WHERE rn <= ${GROUP_CONTACTS} ORDER BY k, id`,
    )
    .bind(...KEY_COLUMNS[reason].flatMap(() => [ctx.organizationId, list]))
    .all<{
      k: string;
      id: string;
      first_name: string;
      last_name: string;
      email: string;
      phone: string | null;
      secondary_phone: string | null;
      created_at: string;
      n: number;
    }>();
  const groups = new Map<string, DuplicateGroup>();
  for (const r of rows.results) {
    const g = groups.get(r.k) ?? { reason, key: r.k, contactCount: r.n, contacts: [] };
    g.contacts.push({
      id: r.id,
      firstName: r.first_name,
      lastName: r.last_name,
      email: r.email,
      phone: r.phone,
      secondaryPhone: r.secondary_phone,
      createdAt: r.created_at,
    });
    groups.set(r.k, g);
  }
  // A contact with one number in both fields counts once: a key only it carries is no group.
  return keys.flatMap((k) => ((groups.get(k)?.contactCount ?? 0) > 1 ? [groups.get(k)!] : []));
}

/**
 * How many groups there are of `reason`, cached per contacts version (crm/list-totals.ts). Phones: the keys two
 * contacts have as their first phone (a walk of that index), and the second phones another contact also has (a probe
 * of both indexes per second phone, which few contacts have); rowid, not the text id, tells contacts apart without
 * reading their rows. About 0.1 s for 100,000 contacts in SQLite here, where one UNION of both columns took 0.8 s.
 */
const groupCount = (reason: DuplicateReason, org: string): { sql: string; params: string[] } =>
  reason === "phone"
    ? {
        sql: `SELECT phone_key AS k FROM contacts WHERE organization_id = ? AND phone_key > '' GROUP BY phone_key HAVING COUNT(*) > 1
          UNION SELECT s.secondary_phone_key FROM contacts s WHERE s.organization_id = ? AND s.secondary_phone_key > '' AND (
            EXISTS (SELECT 1 FROM contacts o WHERE o.organization_id = s.organization_id AND o.phone_key = s.secondary_phone_key AND o.rowid <> s.rowid)
            OR EXISTS (SELECT 1 FROM contacts o WHERE o.organization_id = s.organization_id AND o.secondary_phone_key = s.secondary_phone_key AND o.rowid <> s.rowid))`,
        params: [org, org],
      }
    : {
        sql: `SELECT ${NAME_ZIP_KEY_SQL} AS k FROM contacts WHERE organization_id = ? AND ${NAME_ZIP_KEY_SQL} IS NOT NULL GROUP BY k HAVING COUNT(*) > 1`,
        params: [org],
      };

export async function listDuplicates(ctx: ServiceContext, q: DuplicatesQuery) {
  const reasons = q.reason ? [q.reason] : DUPLICATE_REASONS;
  const { reason, start } = startOf(q.cursor, reasons);
  const org = ctx.organizationId;
  const op = start.inclusive ? ">=" : ">";
  const key = filterKey({ duplicates: reasons.join(",") });
  const totals = await totalStatements(ctx.d1, org, "contacts", key);
  const [counter, cached, ...windows] = await ctx.d1.batch([
    ...totals.statements,
    ...KEY_COLUMNS[reason].map((c) =>
      ctx.d1
        .prepare(`SELECT ${c} AS k FROM contacts WHERE organization_id = ? AND ${c} ${op} ? ORDER BY ${c} LIMIT ${WINDOW}`)
        .bind(org, start.key),
    ),
  ]);
  const plan = planPage(
    windows.map((w) => (w!.results as { k: string }[]).map((r) => r.k)),
    WINDOW,
    start,
    q.limit,
  );
  const data = await groupsOf(ctx, reason, plan.keys);
  const later = reasons.slice(reasons.indexOf(reason) + 1)[0];
  const next = plan.next ? { reason, ...plan.next } : later ? { reason: later, key: "", inclusive: true } : null;
  const counts = reasons.map((r) => groupCount(r, org));
  const { total } = await resolveTotal(
    ctx.d1,
    org,
    "contacts",
    { hash: totals.keyHash, filtered: true },
    { counter: counter!.results, cached: cached!.results },
    countOf(
      `(${counts.map((c) => `SELECT k FROM (${c.sql})`).join(" UNION ALL ")}) g`,
      "1",
      counts.flatMap((c) => c.params),
    ),
  );
  return {
    data,
    pagination: {
      hasMore: next !== null,
      nextCursor: next ? encodeCursor({ sort: SORT, values: [next.reason, next.inclusive ? 1 : 0], id: next.key }) : null,
      total,
      limit: q.limit,
    },
  };
}
