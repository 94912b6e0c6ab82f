import { and, desc, eq, sql } from "drizzle-orm";
import { surveyTemplates } from "../db/schema";
import { expectNoRow, guard, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { decodeNewestFirstCursor, newestFirstPage, olderThan } from "../crm/pagination";
import { Conflict } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { STANDARD_TEMPLATE, type SurveyTemplate, type TemplateCreate } from "./schemas";

/** Survey templates (spec: Survey template): an organization's own, and the standard one it starts with. */
type TemplateRow = typeof surveyTemplates.$inferSelect;

export const MAX_TEMPLATES = 100;

const toTemplate = (r: TemplateRow): SurveyTemplate => {
  const { organizationId: _o, ...rest } = r;
  return rest;
};

/** GET /api/reputation/surveys/templates: newest first, keyset-paginated. */
export async function listTemplates(ctx: ServiceContext, q: { limit: number; cursor?: string }) {
  const after = decodeNewestFirstCursor(q.cursor);
  const rows = await ctx.db
    .select()
    .from(surveyTemplates)
    .where(
      and(
        eq(surveyTemplates.organizationId, ctx.organizationId),
        after ? olderThan(surveyTemplates.createdAt, surveyTemplates.id, after) : undefined,
      ),
    )
    .orderBy(desc(surveyTemplates.createdAt), desc(surveyTemplates.id))
    .limit(q.limit + 1);
  const { page, pagination } = newestFirstPage(rows, q.limit, (r) => ({ at: r.createdAt, id: r.id }));
  return { templates: page.map(toTemplate), pagination };
}

export const hasDefault = (organizationId: string) =>
  and(eq(surveyTemplates.organizationId, organizationId), eq(surveyTemplates.isDefault, true));

function templateRow(organizationId: string, input: TemplateCreate, isDefault: boolean, builtIn: boolean): TemplateRow {
  const at = nowIso();
  return {
    id: newId(),
    organizationId,
    name: input.name,
    description: input.description || null,
    questions: input.questions,
    sendDelayHours: input.sendDelayHours,
    isDefault,
    builtIn,
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * POST /api/reputation/surveys/templates. The first template of an organization is its default; `isDefault: true`
 * moves the default to the new one (in the same batch, so there is always exactly one).
 */
export async function createTemplate(ctx: ServiceContext, input: TemplateCreate): Promise<SurveyTemplate> {
  const mine = eq(surveyTemplates.organizationId, ctx.organizationId);
  return withRetries(async () => {
    const [[count], [current]] = await ctx.db.batch([
      ctx.db.select({ n: sql<number>`COUNT(*)` }).from(surveyTemplates).where(mine),
      ctx.db.select({ id: surveyTemplates.id }).from(surveyTemplates).where(hasDefault(ctx.organizationId)),
    ]);
    if ((count?.n ?? 0) >= MAX_TEMPLATES)
      throw new Conflict(`An organization keeps at most ${MAX_TEMPLATES} survey templates`, "template_limit");
    const isDefault = input.isDefault === true || !current;
    const row = templateRow(ctx.organizationId, input, isDefault, false);
    const statements: Statement[] = [guard(ctx.db, sql`(SELECT COUNT(*) FROM ${surveyTemplates} WHERE ${mine}) < ${MAX_TEMPLATES}`)];
    if (isDefault && current)
      statements.push(
        ctx.db.update(surveyTemplates).set({ isDefault: false, updatedAt: row.createdAt }).where(hasDefault(ctx.organizationId)),
      );
    // A default that appeared since the read (another first template) makes this one a retry, not a second default.
    if (isDefault && !current) statements.push(expectNoRow(ctx.db, surveyTemplates, hasDefault(ctx.organizationId)));
    statements.push(ctx.db.insert(surveyTemplates).values(row));
    await commit(ctx, statements);
    return toTemplate(row);
  });
}

/** The organization's default template; the standard one, made now, when it has none yet. */
export async function defaultTemplate(ctx: ServiceContext): Promise<TemplateRow> {
  return withRetries(async () => {
    const found = await ctx.db.select().from(surveyTemplates).where(hasDefault(ctx.organizationId)).get();
    if (found) return found;
    const row = templateRow(ctx.organizationId, STANDARD_TEMPLATE, true, true);
    await commit(ctx, [expectNoRow(ctx.db, surveyTemplates, hasDefault(ctx.organizationId)), ctx.db.insert(surveyTemplates).values(row)]);
    return row;
  });
}
