// npm run --silent token -- --org "<org name>" --email "<email>" [--name "<user name>"] [--role owner|admin|agent]
// Prints one JSON line {"token","userId","organizationId"} (DESIGN.md contract 2). The same org name maps to the
// same organization and the same email (within it) to the same user; every call mints a new 30-day session. It
// writes local D1 (scripts/local-d1.mjs), so it works whether or not `npm run dev` is running. A new user is an owner
// unless `--role` says otherwise; an existing user keeps the role they have.
import { parseArgs } from "node:util";
import { withLocalD1 } from "./local-d1.mjs";
import { mintLocalSession } from "./local-session.mjs";

const { values } = parseArgs({
  options: { org: { type: "string" }, email: { type: "string" }, name: { type: "string" }, role: { type: "string" } },
});
const org = values.org?.trim();
const email = values.email?.trim().toLowerCase();
const role = values.role ?? "owner";
if (!org || !email || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || !["owner", "admin", "agent"].includes(role)) {
  console.error('usage: npm run --silent token -- --org "<org name>" --email "<email>" [--name "<user name>"] [--role owner|admin|agent]');
  process.exit(2);
}

try {
  const minted = await withLocalD1((env) => mintLocalSession(env, { org, email, name: values.name ?? null, role }), { migrate: true });
  process.stdout.write(`${JSON.stringify(minted)}\n`);
} catch (err) {
  console.error(`token: ${err.message}`);
  process.exit(1);
}
