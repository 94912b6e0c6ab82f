import { eq, sql } from "drizzle-orm";
import { leadRoutingCursors } from "../db/schema";
import { guard, type Statement } from "../db/write";
import type { OrganizationSettings } from "../organization/schemas";
import type { ServiceContext } from "../service-context";
import { leadRecipients } from "../users/service";

/** Round robin's turn as read: the user the last lead went to, and how many turns were taken. */
export interface Turn {
  lastUserId: string | null;
  turn: number;
}

/** Who takes a new lead, and the statements that move round robin's turn (none for a zip rule or nobody). */
export interface Routed {
  userId: string | null;
  statements: Statement[];
}

const normalizedZip = (zip: string) => zip.replace(/[\s-]/g, "").toUpperCase();

/** The users who accept leads and round robin's turn, read side by side. */
export async function readRouting(ctx: ServiceContext): Promise<{ recipients: string[]; turn: Turn }> {
  const [recipients, row] = await Promise.all([
    leadRecipients(ctx),
    ctx.db
      .select({ lastUserId: leadRoutingCursors.lastUserId, turn: leadRoutingCursors.turn })
      .from(leadRoutingCursors)
      .where(eq(leadRoutingCursors.organizationId, ctx.organizationId))
      .get(),
  ]);
  return { recipients, turn: row ?? { lastUserId: null, turn: 0 } };
}

/**
 * Routes a new lead by the organization's `settings.leadRouting` over the users who accept leads. `zip`: the rule of
 * the longest `zipPrefix` the zip starts with, when its user accepts leads; otherwise (and in `round_robin` mode) the
 * next user after the last one round robin chose, in id order (a user who stopped accepting leads is skipped, one who
 * started takes their place in the ring). Round robin's statements guard the turn read and take the next one, in the
 * batch that creates the contact: of concurrent intakes exactly one takes each turn, the others retry with the next.
 */
export function routeLead(
  ctx: ServiceContext,
  routing: OrganizationSettings["leadRouting"],
  zip: string | null,
  { recipients, turn }: { recipients: string[]; turn: Turn },
): Routed {
  if (recipients.length === 0) return { userId: null, statements: [] };
  if (routing.mode === "zip" && zip) {
    const key = normalizedZip(zip);
    const rule = routing.zipRules
      .filter((r) => key.startsWith(r.zipPrefix) && recipients.includes(r.userId))
      .sort((a, b) => b.zipPrefix.length - a.zipPrefix.length)[0];
    if (rule) return { userId: rule.userId, statements: [] };
  }
  const userId = recipients.find((id) => turn.lastUserId === null || id > turn.lastUserId) ?? recipients[0]!;
  const org = ctx.organizationId;
  return {
    userId,
    statements: [
      guard(
        ctx.db,
        sql`COALESCE((SELECT ${leadRoutingCursors.turn} FROM ${leadRoutingCursors} WHERE ${leadRoutingCursors.organizationId} = ${org}), 0) = ${turn.turn}`,
      ),
      ctx.db
        .insert(leadRoutingCursors)
        .values({ organizationId: org, lastUserId: userId, turn: turn.turn + 1 })
        .onConflictDoUpdate({ target: leadRoutingCursors.organizationId, set: { lastUserId: userId, turn: turn.turn + 1 } }),
    ],
  };
}
