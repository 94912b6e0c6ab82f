import { WEBHOOK_EVENTS } from "../../src/webhooks/events";

/**
 * Catalogue events (src/webhooks/events.ts) whose emitters other parts of issue 32 bring: organization.updated, user.created, user.updated, integration.connected and
 * integration.disconnected. Until they land nothing emits them: test/node/catalogue-emitters.test.ts lets them be
 * unemitted (and fails once one is emitted, so this set cannot go stale), and test/webhook-catalogue.test.ts does not
 * wait for them. At the merge: make it empty, and add a row to that test's DRIVE table for each.
 */
export const NOT_YET_EMITTED: ReadonlySet<string> = new Set(WEBHOOK_EVENTS.filter((e) => /^(organization|user|integration)\./.test(e)));
