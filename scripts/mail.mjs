// npm run --silent mail -- --to <email> [--last N]
// Prints the newest messages the development mail provider (`log`) kept for that address, newest first, one JSON line
// each {"to","subject","text","createdAt"} with the body decrypted, plus "attachments" [{filename, contentType, content}]
// when the mail has any (DESIGN.md contract 8). It reads local D1 through
// scripts/local-mail.mjs, so it works whether or not `npm run dev` is running; nothing kept for the address prints nothing.
import { parseArgs } from "node:util";
import { withLocalD1 } from "./local-d1.mjs";
import { readLocalMail } from "./local-mail.mjs";

const USAGE = "usage: npm run --silent mail -- --to <email> [--last N]   (N: 1 to 100, default 10)";
const MAX_LAST = 100;

function usage(problem) {
  console.error(`mail: ${problem}\n${USAGE}`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({ options: { to: { type: "string" }, last: { type: "string" } } }));
} catch (err) {
  usage(err.message);
}
const to = values.to?.trim().toLowerCase();
if (!to || !/^[^\s@]+@[^\s@]+$/.test(to)) usage("--to needs an e-mail address");
const last = values.last === undefined ? 10 : /^\d{1,3}$/.test(values.last) ? Number(values.last) : NaN;
if (!(last >= 1 && last <= MAX_LAST)) usage(`--last must be a whole number from 1 to ${MAX_LAST}`);

try {
  const messages = await withLocalD1((env) => readLocalMail(env, { to, last }));
  if (messages.length > 0) process.stdout.write(`${messages.map((m) => JSON.stringify(m)).join("\n")}\n`);
} catch (err) {
  console.error(`mail: ${err.message}`);
  process.exit(1);
}
