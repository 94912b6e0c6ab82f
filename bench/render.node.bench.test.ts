// Warm render time of each form's PDF (issue 31: target at most 50 ms each), measured in Node with the Worker's own
// render code: inside workerd the clock does not move during pure computation, so a workers test cannot time it.
// `npm run bench -- --project node` prints the figures the README quotes.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { renderDocumentPdf } from "../src/documents/render";
import { amendmentCanonical, day, listingCanonical, purchaseCanonical, representationCanonical } from "../test/helpers/form-canonicals";

// The fonts the Worker reads through its ASSETS binding, from the same files.
const env = {
  ASSETS: { fetch: async (url: string) => new Response(readFileSync(join("assets", new URL(url).pathname))) },
} as unknown as Env;

const FORMS: [string, Record<string, unknown>][] = [
  ["on/agreement-of-purchase-and-sale", purchaseCanonical()],
  ["on/listing-agreement", listingCanonical()],
  ["on/buyer-representation-agreement", representationCanonical()],
  [
    "on/amendment",
    amendmentCanonical("doc_1", {
      waives: [0, 2],
      completion: day(45),
      priceCents: 895_000_00,
      notes: "The seller leaves the dining room chandelier.",
    }),
  ],
];
const RUNS = 30;
const TARGET_MS = 50;

describe("warm render time per form (Node)", () => {
  it(`renders each form's PDF in at most ${TARGET_MS} ms (median of ${RUNS} warm runs)`, async () => {
    const figures: Record<string, { medianMs: number; p90Ms: number; bytes: number }> = {};
    for (const [formKey, canonical] of FORMS) {
      const doc = { id: "doc_bench", formKey, canonical };
      await renderDocumentPdf(env, doc); // cold: fonts parsed, modules loaded
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < RUNS; i++) {
        const start = performance.now();
        bytes = (await renderDocumentPdf(env, doc)).length;
        times.push(performance.now() - start);
      }
      times.sort((a, b) => a - b);
      figures[formKey] = { medianMs: +times[RUNS >> 1]!.toFixed(1), p90Ms: +times[Math.floor(RUNS * 0.9)]!.toFixed(1), bytes };
    }
    console.table(figures);
    for (const [formKey, f] of Object.entries(figures)) expect(f.medianMs, formKey).toBeLessThanOrEqual(TARGET_MS);
  });
});
