import { and, asc, eq, gt } from "drizzle-orm";
import type { Erasable } from "../crm/erasure";
import { templateLinks } from "../db/schema";
import { mentionsAny } from "../lib/sql";
import { nowIso } from "../lib/time";

// The templates' share of a person's erasure (crm/erasure.ts, erasure/erase.ts): a public link names the recipients
// of the roles its visitor does not fill. A link naming the person loses that recipient and stops (404 gone): it could
// only send them more envelopes. Templates themselves name nobody (their envelopes are the signing desk's to erase).

const PAGE = 100;

export const templatesErasable: Erasable = {
  async erase(ctx, scrub, counted) {
    const who = scrub.recognizer;
    for (let after = ""; ; ) {
      const page = await ctx.db
        .select()
        .from(templateLinks)
        .where(
          and(
            eq(templateLinks.organizationId, ctx.organizationId),
            gt(templateLinks.slugHash, after),
            mentionsAny(templateLinks.recipients, who.needles),
          ),
        )
        .orderBy(asc(templateLinks.slugHash))
        .limit(PAGE);
      for (const link of page) {
        const kept = Object.entries(link.recipients).filter(
          ([, r]) => !(who.identifies(r.email) || (who.nameIsTheirs && who.names(r.name))),
        );
        if (kept.length === Object.keys(link.recipients).length) continue;
        await ctx.db.batch([
          ctx.db
            .update(templateLinks)
            .set({ recipients: Object.fromEntries(kept), enabled: false, disabledAt: link.disabledAt ?? nowIso() })
            .where(and(eq(templateLinks.organizationId, ctx.organizationId), eq(templateLinks.slugHash, link.slugHash))),
          counted("template_links"),
        ]);
      }
      if (page.length < PAGE) return {};
      after = page[page.length - 1]!.slugHash;
    }
  },
};
