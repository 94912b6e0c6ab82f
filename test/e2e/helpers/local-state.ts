// The local databases of served.test.ts's server, opened once in this process (scripts/local-d1.mjs) for what its
// suites need only as a means: a token to call the API with, the code a signer was mailed. `npm run token` and
// `npm run mail` do the same through the same code (scripts/local-session.mjs, scripts/local-mail.mjs) but start a
// runtime each, 3 to 5 s of CPU a call and some forty calls a run; dev-and-token.test.ts and action-plans.suite.ts
// still run them as a developer does. Opened at the first call, after the server's hook has set DEV_PERSIST_TO.
import { openLocalD1 } from "../../../scripts/local-d1.mjs";
import { type LocalMail, readLocalMail } from "../../../scripts/local-mail.mjs";
import { mintLocalSession } from "../../../scripts/local-session.mjs";

let opened: ReturnType<typeof openLocalD1> | undefined;
const databases = async () => (await (opened ??= openLocalD1())).env;

/** What `npm run --silent token -- --org <org> --email <email>` prints, minted in this process. */
export async function mintToken(org: string, email: string) {
  return mintLocalSession(await databases(), { org, email });
}

/** What `npm run --silent mail -- --to <to> --last <last>` prints, newest first, read in this process. */
export async function readMail(to: string, last = 1): Promise<LocalMail[]> {
  return readLocalMail(await databases(), { to, last });
}

export async function closeLocalState(): Promise<void> {
  const local = opened;
  opened = undefined;
  await (await local?.catch(() => undefined))?.dispose();
}
