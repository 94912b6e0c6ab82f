import { and, eq } from "drizzle-orm";
import { contacts, users } from "../db/schema";
import { NotFound, Validation } from "../lib/errors";
import type { ServiceContext } from "../platform/context";

/** The user an agentUserId names, in the caller's organization; 404 otherwise (another organization's alike). */
export async function findAgent(ctx: ServiceContext, agentUserId: string) {
  const row = await ctx.db.select({ id: users.id, name: users.name, email: users.email }).from(users).where(and(eq(users.id, agentUserId), eq(users.organizationId, ctx.organizationId))).get();
  if (!row) throw new NotFound("Agent");
  return row;
}

/** The references of a testimonial body: the agent is a user, the author a contact, both of the caller's organization. */
export async function checkReferences(ctx: ServiceContext, refs: { agentUserId?: string; authorPersonId?: string }): Promise<void> {
  const [agent, author] = await ctx.db.batch([
    ctx.db.select({ id: users.id }).from(users).where(and(eq(users.id, refs.agentUserId ?? ""), eq(users.organizationId, ctx.organizationId))),
    ctx.db.select({ id: contacts.id }).from(contacts).where(and(eq(contacts.id, refs.authorPersonId ?? ""), eq(contacts.organizationId, ctx.organizationId))),
  ]);
  const issues = [];
  if (refs.agentUserId !== undefined && agent.length === 0) issues.push({ field: "agentUserId", path: ["agentUserId"], code: "invalid_reference", message: "No user with this id in your organization" });
  if (refs.authorPersonId !== undefined && author.length === 0) issues.push({ field: "authorPersonId", path: ["authorPersonId"], code: "invalid_reference", message: "No contact with this id in your organization" });
  if (issues.length) throw new Validation(issues);
}
