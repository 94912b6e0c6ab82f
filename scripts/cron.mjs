// npm run --silent cron -- [--at <ISO time>] [--port N]
// Runs every scheduled pass (src/cron.ts) once against the running `npm run dev`, as if at that time (default now),
// and prints one JSON line when they are done: {"ok":true,"at":"<ISO time>"} (DESIGN.md contract 12). The passes take
// "now" from the scheduled time they are given, so a test moves time forward by calling this with a later --at.
// It asks wrangler's local trigger route (`/cdn-cgi/local/scheduled`, served by every `wrangler dev`), which calls the
// Worker's scheduled handler with that time and answers once the handler has finished.
import { parseArgs } from "node:util";

const USAGE = "usage: npm run --silent cron -- [--at <ISO time>] [--port N]   (port: PORT, else 8787)";

function fail(problem, code = 2) {
  console.error(`cron: ${problem}${code === 2 ? `\n${USAGE}` : ""}`);
  process.exit(code);
}

let values;
try {
  ({ values } = parseArgs({ options: { at: { type: "string" }, port: { type: "string" } } }));
} catch (err) {
  fail(err.message);
}
const at = values.at === undefined ? new Date() : new Date(values.at);
if (Number.isNaN(at.getTime())) fail(`--at must be an ISO 8601 time, such as 2026-12-06T09:00:00Z (got ${values.at})`);
const port = values.port ?? process.env.PORT ?? "8787";
if (!/^\d{1,5}$/.test(port)) fail(`the port must be a number (got ${port})`);

const url = `http://127.0.0.1:${port}/cdn-cgi/local/scheduled?cron=${encodeURIComponent("* * * * *")}&time=${at.getTime()}&format=json`;
let response;
try {
  response = await fetch(url, { signal: AbortSignal.timeout(5 * 60_000) });
} catch (err) {
  fail(`no answer from npm run dev on port ${port} (${err.cause?.code ?? err.message}); is it running?`, 1);
}
const body = await response.text();
let result;
try {
  result = JSON.parse(body);
} catch {
  fail(`the dev server answered ${response.status} with something other than the scheduled run's result: ${body.slice(0, 200)}`, 1);
}
const ok = response.ok && result.outcome === "ok";
console.log(JSON.stringify({ ok, at: at.toISOString(), ...(ok ? {} : { outcome: result.outcome ?? response.status }) }));
process.exit(ok ? 0 : 1);
