import { and, eq } from "drizzle-orm";
import { organizations, ponds } from "../db/schema";
import { idsOf } from "../lib/sql";
import { expectVersion, expectVersionMatch, versioned, type VersionedTable, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { LEAD_SOURCE } from "../leads/schemas";
import { diffAttributes } from "../lib/changes";
import { type FieldIssue, NotFound, Validation } from "../lib/errors";
import { nowIso } from "../lib/time";
import { hasVisibleText, isOneLine } from "../lib/validation";
import type { ServiceContext } from "../service-context";
import { followOnDirectory } from "../shards/placement";
import { existingUserIds } from "../users/service";
import { type Organization, OrganizationSettings, type UpdateOrganization } from "./schemas";

type Row = typeof organizations.$inferSelect;

/** The organization's row versions its changes (its id is its own organization). */
const ORGANIZATIONS: VersionedTable = {
  table: organizations,
  id: organizations.id,
  organizationId: organizations.id,
  version: organizations.version,
};

/** Stored settings with every default filled in; a key stored by an older release that no longer parses falls back to its default. */
function settingsOf(stored: unknown): OrganizationSettings {
  const parsed = OrganizationSettings.safeParse(stored ?? {});
  return parsed.success ? parsed.data : OrganizationSettings.parse({});
}

function toOrganization(row: Row): Organization {
  return {
    id: row.id,
    name: row.name,
    displayName: row.displayName,
    timeZone: row.timeZone,
    settings: settingsOf(row.settings),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt ?? row.createdAt,
  };
}

/** The caller's organization as its shard holds it (the copy every change commits on first). */
async function findOrganization(ctx: Pick<ServiceContext, "db" | "organizationId">): Promise<Row> {
  const row = await ctx.db.select().from(organizations).where(eq(organizations.id, ctx.organizationId)).get();
  if (!row) throw new NotFound("Organization");
  return row;
}

/** GET /v1/organization. */
export async function getOrganization(ctx: ServiceContext): Promise<Organization> {
  const row = await findOrganization(ctx);
  return versioned(toOrganization(row), row.version);
}

/** The organization's settings, defaults filled in: what lead intake routes and normalizes phones by. */
export async function organizationSettings(ctx: Pick<ServiceContext, "db" | "organizationId">): Promise<OrganizationSettings> {
  return settingsOf((await findOrganization(ctx)).settings);
}

type Reference = { kind: "user" | "pond"; id: string; path: (string | number)[] };

/** Every user and pond id a lead routing names, with its path: zip rules, rules' targets, the default, speed-to-lead's target. */
function referencesOf(value: unknown, path: (string | number)[] = []): Reference[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => referencesOf(v, [...path, i]));
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, v]): Reference[] => {
    const at = [...path, key];
    if (key === "userId" && typeof v === "string") return [{ kind: "user", id: v, path: at }];
    if (key === "pondId" && typeof v === "string") return [{ kind: "pond", id: v, path: at }];
    if ((key === "userIds" || key === "roundRobin") && Array.isArray(v))
      return v.flatMap((id, i) => (typeof id === "string" ? [{ kind: "user" as const, id, path: [...at, i] }] : []));
    return referencesOf(v, at);
  });
}

/**
 * The rules' matches no lead can meet: a source or tag POST /v1/leads would refuse (a line break, a bidi override, a
 * comma, no letter). Checked on writes only, beside the schema (which stays as it was for settings saved before), so
 * such a rule is refused rather than saved to never apply.
 */
function matchIssues(routing: unknown): FieldIssue[] {
  const rules = (routing as { rules?: unknown } | null)?.rules;
  if (!Array.isArray(rules)) return [];
  return rules.flatMap((rule, i): FieldIssue[] => {
    const match = (rule as { match?: { source?: unknown; tag?: unknown } } | null)?.match;
    if (typeof match !== "object" || match === null) return [];
    const at = (key: string, code: string, message: string): FieldIssue => {
      const path = ["settings", "leadRouting", "rules", i, "match", key];
      return { field: path.join("."), path, code, message };
    };
    const issues: FieldIssue[] = [];
    const { source, tag } = match;
    // Over-long values are the schema's to name.
    if (typeof source === "string" && source.length <= 40 && !LEAD_SOURCE.test(source.trim()))
      issues.push(at("source", "invalid_format", "1–40 letters, digits, spaces, dashes or underscores, starting with a letter"));
    if (typeof tag === "string" && !(isOneLine(tag) && hasVisibleText(tag) && !tag.includes(",")))
      issues.push(at("tag", "invalid_character", "A tag is one line of visible text without control characters or commas"));
    return issues;
  });
}

/**
 * Every user or pond a PATCH body's lead routing names that is none of the organization's, and every rule's match no
 * lead can meet, as the 422 lists them (all of them at once). Ponds are read here from their table: the ponds domain
 * reads the settings, so it cannot be asked.
 */
export async function routingIssues(ctx: Pick<ServiceContext, "db" | "organizationId">, body: unknown): Promise<FieldIssue[]> {
  const routing = (body as { settings?: { leadRouting?: unknown } } | null)?.settings?.leadRouting;
  const matches = matchIssues(routing);
  const refs = referencesOf(routing, ["settings", "leadRouting"]);
  if (refs.length === 0) return matches;
  const userIds = [...new Set(refs.filter((r) => r.kind === "user").map((r) => r.id))];
  const pondIds = [...new Set(refs.filter((r) => r.kind === "pond").map((r) => r.id))];
  const [knownUsers, knownPonds] = await Promise.all([
    userIds.length ? existingUserIds(ctx, userIds) : new Set<string>(),
    pondIds.length
      ? ctx.db
          .select({ id: ponds.id })
          .from(ponds)
          .where(and(idsOf(ponds, ctx.organizationId, pondIds)))
          .then((rows) => new Set(rows.map((r) => r.id)))
      : new Set<string>(),
  ]);
  return [
    ...matches,
    ...refs
      .filter((r) => !(r.kind === "user" ? knownUsers : knownPonds).has(r.id))
      .map((r) => ({
        field: r.path.join("."),
        path: r.path,
        code: "invalid_reference",
        message: r.kind === "user" ? "No user of your organization has this id" : "No pond of your organization has this id",
      })),
  ];
}

/** What the directory's copy carries of a row (db/members.ts: everything a change touches). */
const profileOf = (row: Row) => ({
  displayName: row.displayName,
  timeZone: row.timeZone,
  settings: row.settings,
  updatedAt: row.updatedAt,
});

/**
 * PATCH /v1/organization. The shard's row changes first, by compare-and-set on its version, with `organization.updated`
 * in the same batch; then the directory's copy follows (shards/placement.ts `followOnDirectory`). A change that
 * changes nothing writes nothing and emits nothing, but still brings the directory along: so a retry after a failure
 * between the two writes finishes the first without a second event.
 */
export async function updateOrganization(ctx: ServiceContext, input: UpdateOrganization): Promise<Organization> {
  const issues = await routingIssues(ctx, input);
  if (issues.length > 0) throw new Validation(issues);
  return withRetries(async () => {
    const row = await findOrganization(ctx);
    expectVersionMatch(ctx, row.version);
    const before = toOrganization(row);
    const settings = { ...before.settings, ...input.settings };
    const next: Row = {
      ...row,
      displayName: input.displayName === undefined ? row.displayName : input.displayName,
      timeZone: input.timeZone ?? row.timeZone,
      settings,
    };
    const after = toOrganization(next);
    const { changes, previousAttributes } = diffAttributes(before, after, ["updatedAt"]);
    if (changes.length === 0) {
      await followOnDirectory(ctx.directory, organizations, row.id, profileOf(row), row.version);
      return versioned(before, row.version);
    }
    const updated: Row = { ...next, updatedAt: nowIso(), version: row.version + 1 };
    const object = toOrganization(updated);
    await commit(
      ctx,
      [
        expectVersion(ctx.db, ORGANIZATIONS, ctx.organizationId, row),
        ctx.db
          .update(organizations)
          .set({ ...profileOf(updated), version: updated.version })
          .where(eq(organizations.id, row.id)),
      ],
      [newEvent(ctx, "organization.updated", { object, previousAttributes, changes })],
    );
    await followOnDirectory(ctx.directory, organizations, row.id, profileOf(updated), updated.version);
    return versioned(object, updated.version);
  });
}
