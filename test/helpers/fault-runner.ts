import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FAULTS, type FaultRow } from "./fault-table";
import { FAULT_MODES, faultEnv, type FaultMode, FaultPlan, type Step } from "./faulty-bindings";

/**
 * The fault table (issue 29, test/helpers/fault-table.ts): each operation failed at each of its steps in turn, in each
 * fault mode, then recovered as production would, then its invariants checked. Prints operations × steps × result.
 */
type Outcome = {
  operation: string;
  step: string;
  what: string;
  mode: string;
  result: string;
};

/**
 * The rows split into `lanes` lanes: each row marked `ownLane` alone in one, the others dealt in turn over the rest.
 * Every row is in exactly one lane.
 */
export function lanesOf(lanes: number): FaultRow[][] {
  const own = FAULTS.filter((row) => row.ownLane);
  const shared = FAULTS.filter((row) => !row.ownLane);
  const rest = lanes - own.length;
  if (rest < 1) throw new Error(`${lanes} lanes cannot hold ${own.length} rows of their own and the others`);
  return [...own.map((row) => [row]), ...Array.from({ length: rest }, (_, k) => shared.filter((_, i) => i % rest === k))];
}

/**
 * Registers lane `lane` (from 1) of `lanes` (lanesOf), so the lanes run side by side in their own files (test/faults/),
 * each in a fresh runtime of its own.
 */
export function faultLane(lane: number, lanes: number): void {
  const outcomes: Outcome[] = [];
  const summary: { operation: string; steps: number; faults: number; survived: number; seconds: number }[] = [];

  beforeAll(() => {
    // One clock for the file that moves with real time and jumps forward when a recovery waits (fault-table.ts `later`).
    vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
    // Every injected fault is logged by the code that meets it, as it should be; the table below says what came of
    // them. (workerd's own "uncaught exception" lines are not console output and still show.)
    for (const level of ["error", "warn"] as const) vi.spyOn(console, level).mockImplementation(() => undefined);
  });

  /** A markdown table whose columns line up in the test output. */
  function table<T extends Record<string, unknown>>(rows: T[], cols: (keyof T & string)[]): string[] {
    const width = (k: keyof T & string) => Math.max(k.length, ...rows.map((o) => String(o[k]).length));
    const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(width(cols[i]!))).join(" | ")} |`;
    return [line(cols), line(cols.map((c) => "-".repeat(width(c)))), ...rows.map((o) => line(cols.map((c) => String(o[c]))))];
  }

  afterAll(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
    const total = (k: "steps" | "faults" | "survived") => summary.reduce((n, s) => n + s[k], 0);
    console.log(
      [
        "",
        "Faults survived (test/helpers/fault-table.ts): every step of every operation, failed in each mode, then recovered",
        "(crash (as refused): nothing ran after the failed step, so the crash run was the refused run)",
        ...table(outcomes, ["operation", "step", "what", "mode", "result"]),
        "",
        ...table(summary, ["operation", "steps", "faults", "survived", "seconds"]),
        `${summary.length} operations, ${total("steps")} steps, ${total("faults")} faults injected, ${total("survived")} survived`,
      ].join("\n"),
    );
  });

  const short = (err: unknown) => (err instanceof Error ? err.message : String(err)).split("\n").slice(0, 6).join(" ").slice(0, 400);

  /** One run: a fresh seed, the operation on bindings armed at `index` (or none), recovery, checks. */
  async function runOnce(
    row: FaultRow,
    index: number | null,
    mode: FaultMode,
  ): Promise<{ steps: Step[]; error: string | null; hit: boolean; callsAfterHit: number }> {
    const plan = new FaultPlan();
    if (index !== null) plan.arm(index, mode);
    const f = faultEnv(plan);
    const s = await row.seed();
    try {
      await row.act(f, s);
    } catch {
      // A fault may fail the operation in any way; what counts is what holds afterwards.
    }
    const steps = [...plan.steps];
    const { callsAfterHit } = plan;
    // The fault is over: what runs now (a reader, the recovery) has working bindings, as another isolate would.
    plan.disarm();
    try {
      await row.during?.(f, s);
      await row.recover(f, s);
      await row.check(f, s);
      return { steps, error: null, hit: plan.hit, callsAfterHit };
    } catch (err) {
      return { steps, error: short(err), hit: plan.hit, callsAfterHit };
    }
  }

  describe(`faults survived (lane ${lane} of ${lanes})`, () => {
    for (const row of lanesOf(lanes)[lane - 1]!) {
      it(row.operation, async () => {
        const started = vi.getRealSystemTime();
        const clean = await runOnce(row, null, "refused");
        expect(clean.error, "the operation without a fault").toBeNull();
        const picked = clean.steps.map((step, index) => ({ step, index })).filter(({ step }) => row.steps?.pick(step, clean.steps) ?? true);
        expect(picked.length, "steps to fail").toBeGreaterThan(0);
        const runs = picked.flatMap(({ step, index }, n) => (row.modes ?? FAULT_MODES).map((mode) => ({ step, index, n, mode })));
        // A crash differs from a refusal only in the calls after the failed step (they fail too, until the recovery).
        // When the refused run made none before its recovery, the crash run is the same run: its result is the
        // refused run's, not run again (a third of the runs of such a step).
        const refusedAlone = new Map<number, string>();
        const results: Outcome[] = [];
        for (let i = 0; i < runs.length; i += row.concurrency ?? 1) {
          const chunk = runs.slice(i, i + (row.concurrency ?? 1));
          results.push(
            ...(await Promise.all(
              chunk.map(async ({ step, index, n, mode }) => {
                const outcome = { operation: row.operation, step: `${n + 1}/${picked.length}`, what: `${step.binding} ${step.what}` };
                const asRefused = mode === "crash" ? refusedAlone.get(index) : undefined;
                if (asRefused !== undefined) return { ...outcome, mode: "crash (as refused)", result: asRefused };
                const run = await runOnce(row, index, mode);
                const taken = run.steps[index];
                const drifted = !run.hit || taken?.binding !== step.binding || taken?.what !== step.what;
                const result = drifted
                  ? `step not reached as recorded (${taken ? `${taken.binding} ${taken.what}` : "none"})`
                  : (run.error ?? "survived");
                if (mode === "refused" && !drifted && run.callsAfterHit === 0) refusedAlone.set(index, result);
                return { ...outcome, mode, result };
              }),
            )),
          );
        }
        outcomes.push(...results);
        const survived = results.filter((r) => r.result === "survived").length;
        summary.push({
          operation: row.operation,
          steps: picked.length,
          faults: results.length,
          survived,
          seconds: Math.round((vi.getRealSystemTime() - started) / 100) / 10,
        });
        expect(results.filter((r) => r.result !== "survived").map((r) => `step ${r.step} ${r.what} (${r.mode}): ${r.result}`)).toEqual([]);
      }, 300_000);
    }
  });
}
