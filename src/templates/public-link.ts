import { and, desc, eq, gt, isNull, sql } from "drizzle-orm";
import { templateLinkCodes, templateLinks } from "../db/schema";
import { readConfig } from "../env";
import { newToken, sha256Hex } from "../lib/crypto";
import { type FieldIssue, Unprocessable } from "../lib/errors";
import { newId } from "../lib/ids";
import { addSeconds, nowIso } from "../lib/time";
import { sendAfterCommit } from "../mail/mailer";
import type { RequestMeta, ServiceContext } from "../service-context";
import { registerPublicKeys } from "../shards/directory";
import type { PublicLinkRequest, RoleRecipient } from "./schemas";
import { findTemplate } from "./service";
import { useTemplate } from "./use";

type LinkRow = typeof templateLinks.$inferSelect;

/** A visitor's code: 6 digits, valid 10 minutes, 5 tries. */
const CODE_SECONDS = 600;
export const CODE_TRIES = 5;

const publicLinkUrl = (ctx: ServiceContext, slug: string) => `${readConfig(ctx.env).APP_URL.replace(/\/$/, "")}/t/${slug}`;
const state = (l: LinkRow) => ({ role: l.role, enabled: l.enabled, createdAt: l.createdAt, disabledAt: l.disabledAt });

/**
 * POST /api/templates/{id}/public-link. Enabling issues a new slug (a capability: only its SHA-256 is kept, in the
 * template's row of links and in the directory, which finds the organization of a visitor's request) and disables any
 * link before it, in one batch; disabling stops the current one. The visitor's role must be a signer role, and every
 * other role needs its recipient now (422 invalid_public_link naming each).
 */
export async function issuePublicLink(ctx: ServiceContext, templateId: string, input: PublicLinkRequest) {
  const { row, link } = await findTemplate(ctx, templateId);
  const at = nowIso();
  const disableCurrent = ctx.db
    .update(templateLinks)
    .set({ enabled: false, disabledAt: at })
    .where(
      and(eq(templateLinks.organizationId, ctx.organizationId), eq(templateLinks.templateId, templateId), isNull(templateLinks.disabledAt)),
    );
  if (!input.enabled) {
    await ctx.db.batch([disableCurrent]);
    const current = link && (link.disabledAt ? link : { ...link, enabled: false, disabledAt: at });
    return { url: null, publicLink: current && state(current) };
  }

  const issues: FieldIssue[] = [];
  const issue = (path: string[], code: string, message: string) => issues.push({ field: path.join("."), path, code, message });
  const visitor = row.roles.find((r) => r.key === input.role);
  if (!visitor) issue(["role"], "unknown_role", `The template has no role ${input.role}`);
  else if (visitor.role !== "signer") issue(["role"], "not_a_signer", "A public link's visitor signs: choose a signer role");
  for (const r of row.roles)
    if (r.key !== input.role && !input.recipients[r.key])
      issue(["recipients", r.key], "recipient_required", `The role ${r.key} (${r.label}) needs its recipient`);
  for (const key of Object.keys(input.recipients)) {
    if (key === input.role) issue(["recipients", key], "visitor_role", "The visitor fills this role: it takes no recipient");
    else if (!row.roles.some((r) => r.key === key)) issue(["recipients", key], "unknown_role", `The template has no role ${key}`);
  }
  if (issues.length > 0) throw new Unprocessable("invalid_public_link", `${issues.length} problem(s) with the public link`, issues);

  const slug = newToken("tpl");
  const slugHash = await sha256Hex(slug);
  const created: LinkRow = {
    slugHash,
    organizationId: ctx.organizationId,
    templateId,
    role: input.role,
    recipients: input.recipients as Record<string, { name: string; email: string }>,
    enabled: true,
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
    disabledAt: null,
  };
  // The directory learns the slug before the shard write that makes it live (as signing links do).
  await registerPublicKeys(ctx.directory, ctx.organizationId, "template_link", [slugHash]);
  await ctx.db.batch([disableCurrent, ctx.db.insert(templateLinks).values(created)]);
  return { url: publicLinkUrl(ctx, slug), publicLink: state(created) };
}

/** The link of a slug with its template, when enabled; null (answered 404 gone) otherwise. */
export async function openLink(ctx: ServiceContext, slugHash: string) {
  const link = await ctx.db
    .select()
    .from(templateLinks)
    .where(and(eq(templateLinks.organizationId, ctx.organizationId), eq(templateLinks.slugHash, slugHash)))
    .get();
  if (!link?.enabled) return null;
  const { row } = await findTemplate(ctx, link.templateId).catch(() => ({ row: null }));
  if (!row) return null;
  const role = row.roles.find((r) => r.key === link.role);
  return role ? { link, template: row, role } : null;
}

/** What the public page shows before anything is asked: the template's name, its title and pages, the visitor's role. */
export async function publicTemplate(ctx: ServiceContext, slugHash: string) {
  const open = await openLink(ctx, slugHash);
  if (!open) return null;
  return {
    template: { name: open.template.name, title: open.template.title, pageCount: open.template.pageCount },
    role: { key: open.role.key, label: open.role.label },
  };
}

const codeHashOf = (slugHash: string, email: string, code: string) => sha256Hex(`${slugHash}\n${email.toLowerCase()}\n${code}`);

/** A fresh code for the visitor's address, mailed after the answer; null when the link is gone. */
export async function sendVisitorCode(ctx: ServiceContext, slugHash: string, email: string): Promise<{ sent: true } | null> {
  const open = await openLink(ctx, slugHash);
  if (!open) return null;
  const code = String(crypto.getRandomValues(new Uint32Array(1))[0]! % 1_000_000).padStart(6, "0");
  const now = new Date();
  await ctx.db.insert(templateLinkCodes).values({
    id: newId(),
    organizationId: ctx.organizationId,
    slugHash,
    emailHash: await sha256Hex(email.toLowerCase()),
    codeHash: await codeHashOf(slugHash, email, code),
    attempts: 0,
    expiresAt: nowIso(addSeconds(now, CODE_SECONDS)),
    usedAt: null,
    createdAt: nowIso(now),
  });
  ctx.defer(
    sendAfterCommit(
      ctx.env,
      ctx.db,
      {
        organizationId: ctx.organizationId,
        to: email,
        subject: `Your code to sign ${open.template.title}`,
        text: `Your code is ${code}.\n\nType it on the page where you asked to sign "${open.template.title}". It is valid for 10 minutes. If you did not ask for it, ignore this message: nothing happens without the code.`,
      },
      "public link code",
    ),
  );
  return { sent: true };
}

export type StartOutcome =
  | { kind: "gone" }
  | { kind: "wrong"; attemptsLeft: number }
  | { kind: "spent" }
  | { kind: "started"; url: string; envelopeId: string };

/**
 * The visitor's code checked against the newest live code of their address (a wrong one counts a try, compare-and-set
 * so racing guesses each count; the fifth spends it); a right one is used once (compare-and-set: of two racing
 * starts with one code, one makes the envelope) and the template is used with the visitor in the link's role and
 * the link's recipients in the others, `source: public_link`. The answer is the visitor's signing link.
 */
export async function startVisitorEnvelope(
  ctx: ServiceContext,
  slugHash: string,
  visitor: RoleRecipient,
  code: string,
  meta: RequestMeta,
): Promise<StartOutcome> {
  const open = await openLink(ctx, slugHash);
  if (!open) return { kind: "gone" };
  const emailHash = await sha256Hex(visitor.email.toLowerCase());
  const live = and(
    eq(templateLinkCodes.slugHash, slugHash),
    eq(templateLinkCodes.emailHash, emailHash),
    isNull(templateLinkCodes.usedAt),
    gt(templateLinkCodes.expiresAt, nowIso()),
    sql`${templateLinkCodes.attempts} < ${CODE_TRIES}`,
  );
  const current = await ctx.db.select().from(templateLinkCodes).where(live).orderBy(desc(templateLinkCodes.createdAt)).limit(1).get();
  if (!current) return { kind: "spent" };
  const mine = and(live, eq(templateLinkCodes.id, current.id));
  if (current.codeHash !== (await codeHashOf(slugHash, visitor.email, code))) {
    const [counted] = await ctx.db
      .update(templateLinkCodes)
      .set({ attempts: sql`${templateLinkCodes.attempts} + 1` })
      .where(mine)
      .returning({ attempts: templateLinkCodes.attempts });
    const left = counted ? CODE_TRIES - counted.attempts : 0;
    return left > 0 ? { kind: "wrong", attemptsLeft: left } : { kind: "spent" };
  }
  const [used] = await ctx.db.update(templateLinkCodes).set({ usedAt: nowIso() }).where(mine).returning({ id: templateLinkCodes.id });
  if (!used) return { kind: "spent" };
  const sent = await useTemplate(
    ctx,
    open.template.id,
    { recipients: { ...open.link.recipients, [open.link.role]: visitor } },
    meta,
    "public_link",
    open.link.role,
  );
  const link = sent.links.find((l) => l.key === open.link.role);
  if (!link?.url) return { kind: "spent" };
  return { kind: "started", url: link.url, envelopeId: sent.envelopeId };
}
