import { exports } from "cloudflare:workers";
import { Hono } from "hono";

export interface Figure {
  name: string;
  iterations: number;
  medianMs: number;
  p95Ms: number;
  meanMs: number;
}

/** Times `fn` `iterations` times after `warmup` untimed runs; wall-clock inside workerd (performance.now advances on I/O). */
export async function measure(name: string, fn: () => Promise<unknown>, { iterations = 200, warmup = 20 } = {}): Promise<Figure> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { name, iterations, medianMs: at(0.5), p95Ms: at(0.95), meanMs: samples.reduce((a, b) => a + b, 0) / samples.length };
}

/** A request through the Worker's real fetch handler; throws unless the status is the expected one. */
export async function request(path: string, init: RequestInit = {}, expectStatus = 200): Promise<Response> {
  const res = await exports.default.fetch(new Request(`http://bench.test${path}`, init));
  if (res.status !== expectStatus) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  return res;
}

const hello = new Hono().get("/", (c) => c.json({ hello: "world" }));

/** The floor of the same run: a hello-world Hono route, no I/O, through the same runtime. */
export const helloWorld = () => measure("hello-world Hono route (floor)", async () => (await hello.request("/")).arrayBuffer());

export function printTable(title: string, figures: Figure[], baseline?: Figure): void {
  const rows = figures.map((f) => {
    const ratio = baseline ? ` ${(f.medianMs / baseline.medianMs).toFixed(2)}x` : "";
    return `  ${f.name.padEnd(64)} median ${f.medianMs.toFixed(3).padStart(8)} ms  p95 ${f.p95Ms.toFixed(3).padStart(8)} ms${ratio}`;
  });
  console.log([`\n== ${title}${baseline ? ` (ratio against: ${baseline.name})` : ""}`, ...rows].join("\n"));
}
