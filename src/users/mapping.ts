import type { users } from "../db/schema";
import type { User } from "./schemas";

export type UserRow = typeof users.$inferSelect;

/** A user as the API shows it: `status` is `invited` while an invitation link of theirs is live (until `invitedUntil`). */
export function toUser(row: UserRow, invitedUntil: string | undefined): User {
  const { id, email, name, role, acceptsLeads, createdAt } = row;
  return {
    id,
    email,
    name,
    role,
    acceptsLeads,
    status: invitedUntil ? "invited" : "active",
    invitationExpiresAt: invitedUntil ?? null,
    createdAt,
    updatedAt: row.updatedAt ?? createdAt,
  };
}
