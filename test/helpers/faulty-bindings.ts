import { createExecutionContext, createMessageBatch, getQueueResult, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { Env } from "../../src/env";
import { handleQueue } from "../../src/queues";
import { envelopeSigner } from "../../src/signatures/signer-client";

/**
 * Bindings that fail on cue (issue 29, "Faults survived"): wrappers around the REAL local D1 databases and R2 bucket,
 * and a stand-in for the queue platform, that count every step an operation takes (a D1 write — a statement or a
 * batch —, an R2 put or delete, a queue send) and make the Nth one fail. Reads are not steps: they change nothing,
 * so failing one is no different from failing the write after it. Nothing of ours is replaced: the app, the
 * consumers, the cron and the Durable Object run as in production over these bindings.
 *
 * A fault takes one of three shapes, each a way production fails:
 * - `refused`: the step throws without taking effect; every later call works (the code's own error handling runs).
 * - `lost`: the step takes effect, then throws (the answer was lost: a timeout after D1 committed, after R2 stored).
 * - `crash`: the step throws without taking effect, and so does every later call, reads included, until the
 *   recovery: the isolate died there, and nothing after it ran.
 */
export type FaultMode = "refused" | "lost" | "crash";
export const FAULT_MODES: FaultMode[] = ["refused", "lost", "crash"];

export type StepKind = "d1" | "r2.put" | "r2.delete" | "queue.send";

export interface Step {
  kind: StepKind;
  /** The binding (DB, DB_SHARD_0, FILES, EVENTS …). */
  binding: string;
  /** What the step does, short: the statements of a batch by verb and table, the R2 key, the queue. */
  what: string;
}

export class InjectedFault extends Error {
  constructor(step: Step, mode: FaultMode) {
    super(`injected fault (${mode}) at ${step.binding} ${step.what}`);
    this.name = "InjectedFault";
  }
}

/** The fault plan one run shares across all its bindings: what was stepped, and where to fail. */
export class FaultPlan {
  steps: Step[] = [];
  private armed: { index: number; mode: FaultMode } | null = null;
  private crashed = false;
  /** Whether the armed step was reached (a step the run never took is a broken table row, not a survived fault). */
  hit = false;
  /** Calls (reads and steps) made after the armed step, until the disarm. */
  callsAfterHit = 0;

  arm(index: number, mode: FaultMode): void {
    this.armed = { index, mode };
  }

  /** The recovery runs on working bindings: nothing armed, the crash over. Steps keep counting. */
  disarm(): void {
    this.armed = null;
    this.crashed = false;
  }

  /** A call that changes nothing: fails only while crashed. */
  read<T>(binding: string, run: () => Promise<T>): Promise<T> {
    this.noteCall();
    if (this.crashed) return Promise.reject(new InjectedFault({ kind: "d1", binding, what: "read after the crash" }, "crash"));
    return run();
  }

  private noteCall(): void {
    if (this.hit && this.armed) this.callsAfterHit++;
  }

  async step<T>(step: Step, run: () => Promise<T>): Promise<T> {
    this.noteCall();
    if (this.crashed) throw new InjectedFault(step, "crash");
    const index = this.steps.length;
    this.steps.push(step);
    const armed = this.armed;
    if (!armed || armed.index !== index) return run();
    this.hit = true;
    if (armed.mode === "lost") {
      await run();
      throw new InjectedFault(step, "lost");
    }
    if (armed.mode === "crash") this.crashed = true;
    throw new InjectedFault(step, armed.mode);
  }
}

const WRITE = /^\s*(?:insert|update|delete|replace)\b/i;
const CTE_WRITE = /^\s*with\b[\s\S]*\b(?:insert|update|delete)\b/i;
export const isWrite = (sql: string) => WRITE.test(sql) || CTE_WRITE.test(sql);

/** "insert outbox_events", "update envelopes set sealed_key, sealed_sha256", "guard": a statement by verb and table. */
export function statementName(sql: string): string {
  const m = /^\s*(insert(?:\s+or\s+\w+)?\s+into|update|delete\s+from|replace\s+into|select|with)\s+"?([\w]+)"?/i.exec(sql);
  if (!m) return sql.trim().slice(0, 30);
  const verb = m[1]!.toLowerCase().split(/\s+/)[0]!;
  const table = m[2]!;
  if (table === "write_guards") return "guard";
  if (verb === "select" || verb === "with") return "read";
  if (verb !== "update") return `${verb} ${table}`;
  // An update by the columns it sets: two updates of one table are told apart (the certificate's, the seal's).
  const set = /\bset\b([\s\S]*?)(?:\bwhere\b|\breturning\b|$)/i.exec(sql)?.[1] ?? "";
  const columns = [...set.matchAll(/"?(\w+)"?\s*=(?!=)/g)].map((c) => c[1]!).filter((c, i, all) => all.indexOf(c) === i);
  return `update ${table} set ${columns.slice(0, 3).join(", ")}${columns.length > 3 ? ", …" : ""}`;
}

const REAL = Symbol("real statement");
type Wrapped = D1PreparedStatement & { [REAL]: D1PreparedStatement; sql: string };

function wrapStatement(real: D1PreparedStatement, sql: string, binding: string, plan: FaultPlan): Wrapped {
  const exec = <T>(run: () => Promise<T>) =>
    isWrite(sql) ? plan.step({ kind: "d1", binding, what: statementName(sql) }, run) : plan.read(binding, run);
  const wrapped = {
    [REAL]: real,
    sql,
    bind: (...values: unknown[]) => wrapStatement(real.bind(...values), sql, binding, plan),
    first: (column?: string) => exec(() => (column === undefined ? real.first() : real.first(column))),
    run: () => exec(() => real.run()),
    all: () => exec(() => real.all()),
    raw: (options?: { columnNames?: boolean }) => exec(() => real.raw(options as { columnNames: true })),
  };
  return wrapped as unknown as Wrapped;
}

function batchOf(binding: string, plan: FaultPlan, run: (statements: D1PreparedStatement[]) => Promise<D1Result[]>) {
  return (statements: D1PreparedStatement[]) => {
    const wrapped = statements as Wrapped[];
    const reals = wrapped.map((s) => s[REAL] ?? s);
    const sqls = wrapped.map((s) => s.sql ?? "");
    if (!sqls.some(isWrite)) return plan.read(binding, () => run(reals));
    const names = [...new Set(sqls.map(statementName))];
    return plan.step({ kind: "d1", binding, what: `batch(${names.join(", ")})` }, () => run(reals));
  };
}

function faultySession(real: D1DatabaseSession, binding: string, plan: FaultPlan): D1DatabaseSession {
  return {
    prepare: (sql: string) => wrapStatement(real.prepare(sql), sql, binding, plan),
    batch: batchOf(binding, plan, (s) => real.batch(s)),
    getBookmark: () => real.getBookmark(),
  } as unknown as D1DatabaseSession;
}

/** A D1 database (or the sessions opened on it) whose writes are steps of `plan`. */
export function faultyD1(real: D1Database, binding: string, plan: FaultPlan): D1Database {
  return {
    prepare: (sql: string) => wrapStatement(real.prepare(sql), sql, binding, plan),
    batch: batchOf(binding, plan, (s) => real.batch(s)),
    exec: (sql: string) => plan.step({ kind: "d1", binding, what: `exec ${statementName(sql)}` }, () => real.exec(sql)),
    withSession: (constraint?: string) => faultySession(real.withSession(constraint as D1SessionConstraint), binding, plan),
    dump: () => real.dump(),
  } as unknown as D1Database;
}

/** The R2 bucket, whose puts and deletes are steps of `plan`; reads pass (failing only after a crash). */
export function faultyR2(real: R2Bucket, binding: string, plan: FaultPlan): R2Bucket {
  // Ids in keys differ from run to run; the step is the same.
  const shape = (k: string) => k.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "*");
  const keyName = (k: string | string[]) => (Array.isArray(k) ? `${k.length} key(s) ${shape(k[0] ?? "")}` : shape(k));
  return {
    put: (key: string, value: unknown, options?: R2PutOptions) =>
      plan.step({ kind: "r2.put", binding, what: `put ${keyName(key)}` }, () => real.put(key, value as ArrayBuffer, options)),
    delete: (keys: string | string[]) =>
      plan.step({ kind: "r2.delete", binding, what: `delete ${keyName(keys)}` }, () => real.delete(keys)),
    get: (key: string, options?: R2GetOptions) => plan.read(binding, () => real.get(key, options)),
    head: (key: string) => plan.read(binding, () => real.head(key)),
    list: (options?: R2ListOptions) => plan.read(binding, () => real.list(options)),
  } as unknown as R2Bucket;
}

export interface Held {
  id: string;
  body: unknown;
  attempts: number;
}

/**
 * The queue platform, played by the test: `send` and `sendBatch` are steps of `plan` and hold the messages (a `lost`
 * send holds them too: the queue got them, the sender did not hear so). `deliver` hands them to the Worker's queue
 * handler (src/queues.ts) in batches as the platform would, and redelivers what the handler retried or what a batch
 * that threw left unacknowledged — at least once, as Cloudflare Queues promise.
 */
export class HeldQueue {
  held: Held[] = [];
  private seq = 0;
  constructor(
    readonly name: string,
    private readonly binding: string,
    private readonly plan: FaultPlan,
    private readonly batchSize: number,
  ) {}

  private hold(bodies: unknown[]) {
    for (const body of bodies) this.held.push({ id: `${this.name}-${++this.seq}`, body, attempts: 1 });
  }

  readonly producer = {
    send: (body: unknown) =>
      this.plan.step({ kind: "queue.send", binding: this.binding, what: `send ${this.name}` }, async () => void this.hold([body])),
    sendBatch: (messages: { body: unknown }[]) =>
      this.plan.step(
        { kind: "queue.send", binding: this.binding, what: `sendBatch ${this.name} (${messages.length})` },
        async () => void this.hold(messages.map((m) => m.body)),
      ),
  } as unknown as Queue<unknown>;

  /**
   * One delivery of up to a batch of held messages to the Worker's handler with `on` as its env: acked messages
   * leave, retried ones stay (attempts + 1). A handler that throws leaves the whole batch held, as the platform does.
   * Answers how many messages left for good.
   */
  async deliverOnce(on: Env): Promise<number> {
    const taken = this.held.splice(0, this.batchSize);
    if (taken.length === 0) return 0;
    const batch = createMessageBatch(
      this.name,
      taken.map((m) => ({ id: m.id, timestamp: new Date(), attempts: m.attempts, body: m.body })),
    );
    const ctx = createExecutionContext();
    try {
      await handleQueue(batch, on);
    } catch {
      this.held.push(...taken.map((m) => ({ ...m, attempts: m.attempts + 1 })));
      return 0;
    }
    const result = await getQueueResult(batch, ctx);
    const retried = new Set(result.retryMessages.map((m) => m.msgId));
    const acked = new Set(result.explicitAcks);
    // Neither acked nor retried: the platform acks it when the handler returns (implicit ack), unless retryAll.
    const again = taken.filter((m) => retried.has(m.id) || (result.retryBatch.retry && !acked.has(m.id)));
    this.held.push(...again.map((m) => ({ ...m, attempts: m.attempts + 1 })));
    return taken.length - again.length;
  }
}

/** The env an operation runs with: the test env with every stateful binding wrapped, and the queues held. */
export interface FaultEnv {
  env: Env;
  plan: FaultPlan;
  events: HeldQueue;
  deliveries: HeldQueue;
  deadDeliveries: HeldQueue;
  /** Import chunks (issue 33). */
  imports: HeldQueue;
}

const SHARDS = ["DB_SHARD_0", "DB_SHARD_1"] as const;

export function faultEnv(plan = new FaultPlan()): FaultEnv {
  const events = new HeldQueue("events", "EVENTS", plan, 25);
  const deliveries = new HeldQueue("webhook-deliveries", "WEBHOOK_DELIVERIES", plan, 50);
  const deadDeliveries = new HeldQueue("webhook-deliveries-dlq", "WEBHOOK_DELIVERIES_DLQ", plan, 10);
  const imports = new HeldQueue("imports", "IMPORTS", plan, 1);
  const shards = Object.fromEntries(SHARDS.map((b) => [b, faultyD1(env[b], b, plan)]));
  const wrapped = {
    ...env,
    DB: faultyD1(env.DB, "DB", plan),
    ...shards,
    FILES: faultyR2(env.FILES, "FILES", plan),
    EVENTS: events.producer,
    WEBHOOK_DELIVERIES: deliveries.producer,
    IMPORTS: imports.producer,
  } as unknown as Env;
  return { env: wrapped, plan, events, deliveries, deadDeliveries, imports };
}

/**
 * Delivers every held message of both queues, as the platform redelivers, until none is left or `rounds` deliveries
 * in a row let none go (a message retried for good: the caller's checks then say what is missing).
 */
export async function drainQueues(f: FaultEnv, { rounds = 8 } = {}): Promise<void> {
  for (let idle = 0; idle < rounds && f.events.held.length + f.deliveries.held.length + f.imports.held.length > 0; ) {
    const done = (await f.imports.deliverOnce(f.env)) + (await f.events.deliverOnce(f.env)) + (await f.deliveries.deliverOnce(f.env));
    idle = done > 0 ? 0 : idle + 1;
  }
}

/** Runs `work` with the envelope's signing Durable Object on `f.env` (`withSignerEnv`). */
export const withSignerOn = <T>(envelopeId: string, f: FaultEnv, work: () => Promise<T>): Promise<T> =>
  withSignerEnv(envelopeId, f.env, work);

/**
 * Runs `work` with the envelope's signing Durable Object on `objectEnv`: its bindings are swapped within
 * runInDurableObject (the envelope state it cached holds the old shard binding, so it goes too and the object reloads
 * through the new ones), and what it defers with `waitUntil` (the publish after its answer, a mail) is awaited before
 * the bindings go back, so no step of the run lands after it.
 */
export async function withSignerEnv<T>(envelopeId: string, objectEnv: Env, work: () => Promise<T>): Promise<T> {
  const stub = envelopeSigner(env, envelopeId);
  type Instance = { env: Env; ctx: DurableObjectState; state: unknown };
  const deferred: Promise<unknown>[] = [];
  let original: { env: Env; ctx: DurableObjectState } | undefined;
  await runInDurableObject(stub, (instance: unknown) => {
    const object = instance as Instance;
    original = { env: object.env, ctx: object.ctx };
    const realCtx = object.ctx;
    object.env = objectEnv;
    object.ctx = new Proxy(realCtx, {
      get: (target, prop) => {
        if (prop === "waitUntil") return (w: Promise<unknown>) => (deferred.push(w), target.waitUntil(w));
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    object.state = null;
  });
  try {
    const result = await work();
    await Promise.allSettled(deferred);
    return result;
  } finally {
    await runInDurableObject(stub, (instance: unknown) => {
      const object = instance as Instance;
      object.env = original!.env;
      object.ctx = original!.ctx;
      object.state = null;
    });
  }
}
