import { and } from "drizzle-orm";
import { users } from "../db/schema";
import { type FieldIssue, Unprocessable } from "../lib/errors";
import { idsOf } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { type Recipient, uploadRecipients } from "./recipients";
import type { SignatureRequest } from "./schemas";

/**
 * Issue 45: a recipient who signs inside the sender's application (`embedded`) or in person on a host's device
 * (`inPerson.hostUserId`). These checks need the organization's users, so they run beside uploadRecipients' own and
 * their problems join its 422 (every problem at once): not both, never a cc (a cc holds no link), and a host who is a
 * user of the organization.
 */
export async function hostedRecipientIssues(ctx: ServiceContext, recipients: SignatureRequest["recipients"]): Promise<FieldIssue[]> {
  const issues: FieldIssue[] = [];
  const issue = (path: (string | number)[], code: string, message: string) => issues.push({ field: path.join("."), path, code, message });
  const list = recipients ?? [];
  const hosts = [...new Set(list.flatMap((r) => (r.inPerson ? [r.inPerson.hostUserId] : [])))];
  const known = hosts.length
    ? new Set(
        (
          await ctx.db
            .select({ id: users.id })
            .from(users)
            .where(and(idsOf(users, ctx.organizationId, hosts)))
        ).map((u) => u.id),
      )
    : new Set<string>();
  for (const [i, r] of list.entries()) {
    if (r.embedded && r.inPerson)
      issue(["recipients", i, "inPerson"], "embedded_and_in_person", "A recipient signs embedded or in person, not both");
    if ((r.embedded || r.inPerson) && r.role === "cc")
      issue(["recipients", i, r.embedded ? "embedded" : "inPerson"], "no_link_for_cc", "A cc signs nowhere: they get the sealed copy");
    if (r.inPerson && !known.has(r.inPerson.hostUserId))
      issue(["recipients", i, "inPerson", "hostUserId"], "unknown_user", "The host must be a user of your organization");
  }
  return issues;
}

/** An uploaded document's recipients (recipients.ts), with the hosted recipients' problems named in the same 422. */
export async function checkedUploadRecipients(
  ctx: ServiceContext,
  doc: Parameters<typeof uploadRecipients>[0],
  input: SignatureRequest,
): Promise<Recipient[]> {
  const hosted = await hostedRecipientIssues(ctx, input.recipients);
  let recipients: Recipient[];
  try {
    recipients = uploadRecipients(doc, input);
  } catch (err) {
    if (err instanceof Unprocessable && err.code === "invalid_recipients" && hosted.length > 0) {
      const issues = [...(err.issues ?? []), ...hosted];
      throw new Unprocessable("invalid_recipients", `${issues.length} problem(s) with the recipients and fields`, issues);
    }
    throw err;
  }
  if (hosted.length > 0) throw new Unprocessable("invalid_recipients", `${hosted.length} problem(s) with the recipients`, hosted);
  return recipients;
}

/** Whether a recipient signs through a view URL or a host session, and so is never mailed a link. */
export const unmailed = (r: { embedded: boolean; hostUserId: string | null }) => r.embedded || r.hostUserId !== null;
