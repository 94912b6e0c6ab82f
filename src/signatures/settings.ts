import { eq } from "drizzle-orm";
import { signatureSettings } from "../db/schema";
import type { ReminderPlan, SignerVerification } from "../db/signatures";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";

/** The organization's defaults for new envelopes: attested signers and no reminders until it says otherwise. */
export async function readSettings(
  ctx: ServiceContext,
): Promise<{ signerVerification: SignerVerification; reminders: ReminderPlan | null }> {
  const row = await ctx.db.select().from(signatureSettings).where(eq(signatureSettings.organizationId, ctx.organizationId)).get();
  return { signerVerification: row?.signerVerification ?? "attested", reminders: row?.reminders ?? null };
}

/** PUT /api/signatures/settings: the fields given replace the stored ones (an upsert: concurrent puts each land whole). */
export async function updateSettings(
  ctx: ServiceContext,
  input: { signerVerification?: SignerVerification; reminders?: ReminderPlan | null },
) {
  const current = await readSettings(ctx);
  const next = {
    signerVerification: input.signerVerification ?? current.signerVerification,
    reminders: input.reminders === undefined ? current.reminders : input.reminders,
  };
  const set = {
    ...(input.signerVerification ? { signerVerification: input.signerVerification } : {}),
    ...(input.reminders !== undefined ? { reminders: input.reminders } : {}),
    updatedAt: nowIso(),
  };
  await ctx.db
    .insert(signatureSettings)
    .values({ organizationId: ctx.organizationId, ...next, updatedAt: set.updatedAt })
    .onConflictDoUpdate({ target: signatureSettings.organizationId, set })
    .run();
  return readSettings(ctx);
}
