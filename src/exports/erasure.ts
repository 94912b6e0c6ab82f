import type { Erasable } from "../crm/erasure";
import { deleteExportArchives } from "../files/export-archives";

// The organization exports' share of a person's erasure (crm/erasure.ts, erasure/erase.ts): an export made before
// holds the person, so every export zip of the organization goes.
export const exportsErasable: Erasable = {
  async erase(ctx, _scrub, counted) {
    await deleteExportArchives(ctx, () => counted("exports"));
    return {};
  },
};
