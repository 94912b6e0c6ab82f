// The one `npm run dev` of served.test.ts, which every *.suite.ts of this folder talks to: imported by each suite,
// evaluated once for the file, so its hooks start one server (on a state of its own) before the suites' own hooks,
// and close the one Chromium the browser suites share (helpers/chromium.ts) and the handle on its local databases
// (helpers/local-state.ts) after them.
import { afterAll } from "vitest";
import { closeSharedChromium } from "./chromium";
import { devForThisFile } from "./dev-server";
import { closeLocalState } from "./local-state";

export const dev = devForThisFile();
afterAll(closeSharedChromium);
afterAll(closeLocalState);
