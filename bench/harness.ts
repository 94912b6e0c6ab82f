import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { createApp } from "../src/app";
import type { Env } from "../src/env";
import { everyShard } from "../src/shards/bindings";

export interface Figure {
  name: string;
  iterations: number;
  medianMs: number;
  p95Ms: number;
  meanMs: number;
}

/**
 * Times `fn`. workerd's clock only moves in whole milliseconds and only across I/O, so each sample is the mean of
 * `perSample` back-to-back calls; medians and p95 are over samples.
 */
export async function measure(
  name: string,
  fn: () => Promise<unknown>,
  { iterations = 200, warmup = 20, perSample = 10 } = {},
): Promise<Figure> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < Math.ceil(iterations / perSample); i++) samples.push(await sample(fn, perSample));
  return summarize(name, samples, iterations);
}

async function sample(fn: () => Promise<unknown>, calls: number): Promise<number> {
  const start = performance.now();
  for (let j = 0; j < calls; j++) await fn();
  return (performance.now() - start) / calls;
}

function summarize(name: string, samples: number[], iterations: number): Figure {
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { name, iterations, medianMs: at(0.5), p95Ms: at(0.95), meanMs: samples.reduce((a, b) => a + b, 0) / samples.length };
}

/**
 * Times several scenarios round-robin (one sample of each per round), so a baseline and the figures compared with it
 * see the same machine load, JIT state and cache warmth.
 */
export async function measureInterleaved(
  scenarios: { name: string; fn: () => Promise<unknown> }[],
  { rounds = 30, perSample = 10, warmup = 20 } = {},
): Promise<Figure[]> {
  for (const s of scenarios) for (let i = 0; i < warmup; i++) await s.fn();
  const samples = scenarios.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    for (const [i, s] of scenarios.entries()) samples[i]!.push(await sample(s.fn, perSample));
  }
  return scenarios.map((s, i) => summarize(s.name, samples[i]!, rounds * perSample));
}

/**
 * The floor of the same run: a request through the Worker's own fetch entry that touches no binding (an unknown
 * route answered by the app's 404 handler after the common middleware).
 */
export const helloWorld = () =>
  measure("floor: Worker fetch, no D1 (unknown route, 404)", async () =>
    (await exports.default.fetch(new Request("http://bench.test/__floor"))).arrayBuffer(),
  );

export function printTable(title: string, figures: Figure[], baseline?: Figure): void {
  const rows = figures.map((f) => {
    const ratio = baseline ? ` ${(f.medianMs / baseline.medianMs).toFixed(2)}x` : "";
    return `  ${f.name.padEnd(64)} median ${f.medianMs.toFixed(3).padStart(8)} ms  p95 ${f.p95Ms.toFixed(3).padStart(8)} ms${ratio}`;
  });
  console.log([`\n== ${title}${baseline ? ` (ratio against: ${baseline.name})` : ""}`, ...rows].join("\n"));
}

/**
 * D1 bindings that count round trips: each prepare().run/all/first/raw and each batch is one, also through the
 * sessions the app opens (platform/session.ts). One counter over all of them, so a route's figure is its trips to the
 * directory and to its organization's shard together (issue 24).
 */
export function countD1<K extends string>(bindings: Record<K, D1Database>) {
  let trips = 0;
  const wrapStmt = (s: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(s, {
      get(target, prop) {
        if (prop === "bind") return (...args: unknown[]) => wrapStmt(target.bind(...args));
        if (prop === "run" || prop === "all" || prop === "first" || prop === "raw") trips++;
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  const counting = <T extends D1Database | D1DatabaseSession>(db: T): T =>
    new Proxy(db, {
      get(target, prop) {
        if (prop === "prepare") return (q: string) => wrapStmt(target.prepare(q));
        if (prop === "batch") return (stmts: D1PreparedStatement[]) => (trips++, target.batch(stmts));
        if (prop === "withSession") return (c?: string) => counting((target as D1Database).withSession(c));
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  const dbs = Object.fromEntries(Object.entries<D1Database>(bindings).map(([k, db]) => [k, counting(db)])) as Record<K, D1Database>;
  return { dbs, trips: () => trips, reset: () => void (trips = 0) };
}

/** The directory (`DB`) and every shard binding (`DB_SHARD_n`) of `env`, counted by one counter: spread over the env. */
export function countAllD1(from: Env = env) {
  const bindings: Record<string, D1Database> = { DB: from.DB };
  for (const { shard, db } of everyShard(from)) bindings[`DB_SHARD_${shard}`] = db;
  return countD1(bindings);
}

/** A Durable Object namespace that counts the RPC calls made on its stubs. */
export function countDurableObjectCalls<T>(ns: T) {
  let calls = 0;
  const target = ns as unknown as { get(id: unknown): object };
  const namespace = new Proxy(target, {
    get(t, prop) {
      if (prop === "get") {
        return (id: unknown) =>
          new Proxy(t.get(id), {
            // RPC stub methods are themselves RPC proxies (no .apply): call them as methods of the stub.
            get(s, method) {
              if (typeof method !== "string" || method === "then") return Reflect.get(s, method);
              return (...args: unknown[]) => (calls++, (s as Record<string, (...a: unknown[]) => unknown>)[method]!(...args));
            },
          });
      }
      const v = Reflect.get(t, prop) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  }) as unknown as T;
  return { namespace, calls: () => calls, reset: () => void (calls = 0) };
}

/** Percentile of a list of milliseconds (nearest rank). */
export const percentile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
};

/**
 * The real app with D1 bindings that count round trips on the directory and every shard (each prepare().run/all/first/raw
 * and each batch is one).
 * Requests wait for their deferred work (the event publish), so all of their round trips are counted.
 */
export function countingApp(vars: Record<string, string> = {}) {
  const counted = countAllD1();
  const app = createApp();
  // `vars` over the test env: configuration of an outside service for this app (a fake AI gateway's URL, say).
  const benchEnv = { ...env, ...vars, ...counted.dbs };
  return {
    trips: counted.trips,
    reset: counted.reset,
    async get<T = { data: { id: string }[]; pagination: { nextCursor: string | null; total: number; hasMore: boolean } }>(
      path: string,
      token: string,
    ): Promise<T> {
      return (await this.send("GET", path, token)) as T;
    },
    async send(method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}): Promise<unknown> {
      const ctx = createExecutionContext();
      const init = {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      };
      const res = await app.fetch(new Request(`http://bench.test${path}`, init), benchEnv, ctx);
      await waitOnExecutionContext(ctx);
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<unknown>;
    },
  };
}

/**
 * Issue 30: round trips by database, reads apart from writes, and in waves. The directory (`DB`) and the shards
 * (`DB_SHARD_n`) are counted apart; a trip whose statements all SELECT is a read, any other a write; a wave is a run
 * of round trips in flight together (one that starts while none is in flight opens a new wave), so two reads side by
 * side are two trips in one wave.
 */
export function countReadsByDatabase(from: Env = env) {
  type Where = "directory" | "shards";
  let inFlight = 0;
  let waves = 0;
  const trips = { directoryReads: 0, directoryWrites: 0, shardReads: 0, shardWrites: 0 };
  const sqlOf = new WeakMap<object, string>();
  const isRead = (sql: string | undefined) => /^\s*(SELECT|WITH)\b/i.test(sql ?? "") && !/\b(INSERT|UPDATE|DELETE)\b/i.test(sql ?? "");
  const start = (where: Where, read: boolean) => {
    trips[`${where === "directory" ? "directory" : "shard"}${read ? "Reads" : "Writes"}`]++;
    if (inFlight++ === 0) waves++;
  };
  const settle = <T>(p: Promise<T>): Promise<T> => p.finally(() => void inFlight--);
  const wrapStmt = (s: D1PreparedStatement, where: Where, sql: string): D1PreparedStatement => {
    const wrapped: D1PreparedStatement = new Proxy(s, {
      get(target, prop) {
        if (prop === "bind") return (...args: unknown[]) => wrapStmt(target.bind(...args), where, sql);
        const v = Reflect.get(target, prop);
        if (prop === "run" || prop === "all" || prop === "first" || prop === "raw")
          return (...args: unknown[]) => (
            start(where, isRead(sql)), settle((v as (...a: unknown[]) => Promise<unknown>).apply(target, args))
          );
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    sqlOf.set(wrapped, sql);
    return wrapped;
  };
  const counting = <T extends D1Database | D1DatabaseSession>(db: T, where: Where): T =>
    new Proxy(db, {
      get(target, prop) {
        if (prop === "prepare") return (q: string) => wrapStmt(target.prepare(q), where, q);
        if (prop === "batch")
          return (stmts: D1PreparedStatement[]) => (
            start(
              where,
              stmts.every((st) => isRead(sqlOf.get(st))),
            ),
            settle(target.batch(stmts))
          );
        if (prop === "withSession") return (c?: string) => counting((target as D1Database).withSession(c), where);
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  const bindings: Record<string, D1Database> = { DB: counting(from.DB, "directory") };
  for (const { shard, db } of everyShard(from)) bindings[`DB_SHARD_${shard}`] = counting(db, "shards");
  return {
    env: { ...from, ...bindings } as Env,
    figures: () => ({ ...trips, waves }),
    reset: () => void ((trips.directoryReads = trips.directoryWrites = trips.shardReads = trips.shardWrites = 0), (waves = 0)),
  };
}
