import { and, eq, inArray } from "drizzle-orm";
import type { Erasable } from "../crm/erasure";
import { imports } from "../db/schema";
import { expectNoRow } from "../db/write";
import { Conflict } from "../lib/errors";

// The imports' share of a person's erasure (crm/erasure.ts, erasure/erase.ts): it waits for them.

const importRunning = () =>
  new Conflict(
    "An import of your organization is running and its file may name this person: erase once it has ended (GET /v1/imports/{id}), or cancel it",
    "import_running",
  );

export const importsErasable: Erasable = {
  /**
   * An import's source file may name the person and would bring them back: while one is queued or running the erasure
   * is refused (409 import_running) before anything is done, and `begin`'s batch holds that no import started since.
   */
  async begin(ctx) {
    const importing = and(eq(imports.organizationId, ctx.organizationId), inArray(imports.status, ["queued", "running"]));
    if (await ctx.db.select({ id: imports.id }).from(imports).where(importing).limit(1).get()) throw importRunning();
    return { write: () => ({ statements: [expectNoRow(ctx.db, imports, importing)] }) };
  },
};
