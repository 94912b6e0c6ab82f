// npm run shard:move -- --org <organization id> --to <shard>: moves an organization to another tenant shard (issue 24)
// through the running dev server's operator route (POST /admin/shards/moves), calling it again until the move is done.
// Each call runs the move's batches for a few seconds; stopped or crashed at any point, the same command resumes it.
// Reaches the server at APP_URL (environment, then .dev.vars), else http://127.0.0.1:$PORT (8787), with .dev.vars'
// ADMIN_TOKEN (or the environment's). Against a deployment: APP_URL=https://… ADMIN_TOKEN=… npm run shard:move -- …
import { parseArgs } from "node:util";
import { devOrigin } from "./dev-origin.mjs";
import { readLocalDevVars } from "./dev-vars.mjs";

const { values } = parseArgs({ options: { org: { type: "string" }, to: { type: "string" }, "drain-seconds": { type: "string" } } });
const to = Number(values.to);
if (!values.org || values.to === undefined || !Number.isInteger(to)) {
  console.error("usage: npm run shard:move -- --org <organization id> --to <shard number> [--drain-seconds <n>]");
  process.exit(2);
}

const fileVars = readLocalDevVars();
const origin = devOrigin({ port: process.env.PORT ?? "8787", env: process.env, fileVars }).APP_URL.replace(/\/+$/, "");
const token = process.env.ADMIN_TOKEN || fileVars.ADMIN_TOKEN;
if (!token) {
  console.error("shard:move: no ADMIN_TOKEN in the environment or .dev.vars");
  process.exit(2);
}
const body = {
  organizationId: values.org,
  to,
  ...(values["drain-seconds"] !== undefined ? { drainSeconds: Number(values["drain-seconds"]) } : {}),
};

for (;;) {
  let res;
  try {
    res = await fetch(`${origin}/admin/shards/moves`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch (err) {
    console.error(`shard:move: ${origin} did not answer (${err.cause?.code ?? err.message}); is \`npm run dev\` running?`);
    process.exit(1);
  }
  const answer = await res.json().catch(() => ({}));
  if (res.status !== 200 && res.status !== 202) {
    console.error(`shard:move: ${res.status} ${answer.message ?? answer.error ?? JSON.stringify(answer)}`);
    process.exit(1);
  }
  const where = answer.table ? ` (${answer.table}, ${answer.tablesDone}/${answer.tables} tables)` : "";
  console.log(`${answer.phase}${where}`);
  if (res.status === 200) {
    console.log(`organization ${answer.organizationId} now lives on shard ${answer.to}`);
    break;
  }
  const wait = Number(res.headers.get("retry-after") ?? 0);
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait * 1000));
}
