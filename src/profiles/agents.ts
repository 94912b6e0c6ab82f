import { and, eq } from "drizzle-orm";
import { type Reference, referenceIssuesOf, referencesRead } from "../db/references";
import { users } from "../db/schema";
import { type FieldIssue, NotFound, Validation } from "../lib/errors";
import type { ServiceContext } from "../service-context";

/** The user an agentUserId names, in the caller's organization; 404 otherwise (another organization's alike). */
export async function findAgent(ctx: ServiceContext, agentUserId: string) {
  const row = await ctx.db
    .select({ id: users.id, name: users.name, email: users.email })
    .from(users)
    .where(and(eq(users.id, agentUserId), eq(users.organizationId, ctx.organizationId)))
    .get();
  if (!row) throw new NotFound("Agent");
  return row;
}

/**
 * The references of a reputation write: the agent is a user of the caller's organization, and each contact or deal
 * the write names is there (db/references.ts); every problem in one 400.
 */
export async function checkReferences(ctx: ServiceContext, agentUserId: string | undefined, refs: Reference[]): Promise<void> {
  const [agent, refRow] = await ctx.db.batch([
    ctx.db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.id, agentUserId ?? ""), eq(users.organizationId, ctx.organizationId))),
    referencesRead(ctx, refs),
  ]);
  const refIssues = referenceIssuesOf(refs, refRow);
  const issues: FieldIssue[] = [];
  if (agentUserId !== undefined && agent.length === 0)
    issues.push({
      field: "agentUserId",
      path: ["agentUserId"],
      code: "invalid_reference",
      message: "No user with this id in your organization",
    });
  issues.push(...refIssues);
  if (issues.length) throw new Validation(issues);
}
