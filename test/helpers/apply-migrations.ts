import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { everyShard } from "../../src/shards/bindings";

// Runs before each test file; applyD1Migrations skips migrations already applied to this file's storage. The
// directory set goes to DB, the tenant set to every shard, as scripts/migrate.mjs does outside tests.
await Promise.all([
  applyD1Migrations(env.DB, env.DIRECTORY_MIGRATIONS),
  ...everyShard(env).map(({ db }) => applyD1Migrations(db, env.TENANT_MIGRATIONS)),
]);

// Modules the Worker loads at first use (`await import`). In the test pool a dynamic import is fetched from Vite over
// the network, so the first one is I/O of the request that started it, and a request or queue batch awaiting the same
// pending import from another context hangs. Loading them here, before any request, leaves nothing pending. (A
// deployed Worker has every module in its bundle: there a dynamic import does no I/O.)
await Promise.all([
  import("../../src/app"),
  import("../../src/signatures/actions"),
  import("../../src/signatures/machine"),
  import("../../src/signatures/reminders"),
  import("../../src/signatures/resend"),
  import("../../src/signatures/session-transitions"),
  import("../../src/shards/tenants"),
  import("../../src/db/write"),
  import("../../src/plants/routes"),
  import("../../src/contacts/routes"),
  import("../../src/communications/routes"),
  import("../../src/erasure/service"),
  import("../../src/properties/routes"),
  import("../../src/deals/routes"),
  import("../../src/trash/routes"),
  import("../../src/organization/routes"),
  import("../../src/users/routes"),
  import("../../src/users/invite-routes"),
  import("../../src/webhooks/routes"),
  import("../../src/webhooks/transport"),
  import("../../src/documents/obligation-routes"),
  import("../../src/documents/search-routes"),
  import("../../src/documents/routes"),
  import("../../src/documents/draft-routes"),
  import("../../src/signatures/routes"),
  import("../../src/signatures/public-routes"),
  import("../../src/platform/bot-challenge"),
  import("../../src/signatures/verify-routes"),
  import("../../src/files/routes"),
  import("../../src/testimonials/routes"),
  import("../../src/profiles/routes"),
  import("../../src/profiles/public-routes"),
  import("../../src/referrals/routes"),
  import("../../src/surveys/routes"),
  import("../../src/clickwrap/routes"),
  import("../../src/templates/routes"),
  import("../../src/tasks/routes"),
  import("../../src/appointments/routes"),
  import("../../src/action-plans/routes"),
  import("../../src/smart-lists/routes"),
  import("../../src/ponds/contact-routes"),
  import("../../src/appointments/feed-routes"),
  import("../../src/ponds/routes"),
  import("../../src/api-keys/routes"),
  import("../../src/custom-fields/routes"),
  import("../../src/documents/form-routes"),
  import("../../src/exports/routes"),
  import("../../src/imports/routes"),
  import("../../src/integrations/routes"),
  import("../../src/leads/routes"),
  import("../../src/signatures/document-link"),
  import("../../src/signatures/pdfjs-assets"),
  import("../../src/templates/public-routes"),
  import("../../src/oauth/routes"),
  import("../../src/oauth/client-documents"),
  import("../../src/mcp/routes"),
  import("../../src/admin/routes"),
  import("@scalar/hono-api-reference"),
  import("../../src/queues"),
  import("../../src/cron"),
]);
await Promise.all([
  import("@pdfme/pdf-lib"),
  import("sentiment"),
  import("../../src/seal/placeholder"),
  import("pkijs"),
  import("asn1js"),
  import("../../src/seal/keys"),
  import("../../src/seal/cms"),
  import("../../src/seal/pades"),
  import("../../src/seal/verify"),
]);

// The app is built at an isolate's first request (src/index.ts); build it here, so no request of a test awaits a
// build another request started (files share the runtime: a pending promise must not cross requests).
await (await import("../../src/index")).default.fetch(new Request("http://api.test/warm-up"), env, {
  waitUntil() {},
  passThroughOnException() {},
  props: {},
} as unknown as ExecutionContext);

// Likewise the envelope signer's transitions: an object that loaded them itself would hand a pending import to the
// others running beside it.
const worker = await import("../../src/index");
await worker.EnvelopeSigner.loadTransitions();
// And the queue consumers: a first batch loads them, and a batch beside it would await that pending import.
await worker.default.queue({ queue: "events", messages: [], ackAll() {}, retryAll() {} } as unknown as MessageBatch<unknown>, env);
