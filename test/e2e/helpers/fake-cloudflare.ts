// A fake Cloudflare API on 127.0.0.1 for the deploy tests: the v4 envelope (`success`, `errors`, `messages`,
// `result`) on the calls wrangler and scripts/deploy.mjs make, with D1 databases that really execute SQL (node:sqlite)
// so a test can look inside what a deploy migrated. Reached through CLOUDFLARE_API_BASE_URL; nothing leaves the
// machine. Every call is recorded; `failOnce` makes the next matching call answer 500, as a deploy meets a fault.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { DatabaseSync } from "node:sqlite";
// SQL split into statements as wrangler splits a migration file (D1 itself runs a query string statement by statement).
import { unstable_splitSqlQuery as splitStatements } from "wrangler";

export interface Call {
  method: string;
  path: string;
  status: number;
}

interface Database {
  uuid: string;
  name: string;
  created_at: string;
  sql: DatabaseSync;
}

interface Queue {
  queue_id: string;
  queue_name: string;
  created_on: string;
  modified_on: string;
  /** As the API answers them: the Worker named as `script`. */
  consumers: Array<{ consumer_id: string; script: string; type: string; settings: unknown; dead_letter_queue?: string }>;
}

/** A Worker as the last upload left it: its metadata (bindings, compatibility, migrations) and module names. */
export interface UploadedScript {
  metadata: {
    main_module?: string;
    bindings?: Array<{ type: string; name: string; [k: string]: unknown }>;
    compatibility_date?: string;
    compatibility_flags?: string[];
    keep_bindings?: string[];
    migrations?: unknown;
    [k: string]: unknown;
  };
  modules: string[];
  migrationTag?: string;
  workersDev: boolean;
  secrets: Map<string, string>;
  schedules: string[];
  uploads: number;
}

export interface FakeCloudflare {
  /** The value for CLOUDFLARE_API_BASE_URL. */
  url: string;
  accountId: string;
  calls: Call[];
  databases: Map<string, Database>;
  queues: Map<string, Queue>;
  buckets: Map<string, { name: string; creation_date: string }>;
  indexes: Map<string, { name: string; config: { dimensions: number; metric: string }; created_on: string }>;
  scripts: Map<string, UploadedScript>;
  /** The calls that changed something (anything but GET), as "METHOD /path" without the account prefix. */
  changes(): string[];
  /** The database named `name`, to query as a test would. */
  database(name: string): DatabaseSync | undefined;
  /** The next call whose "METHOD /path" (without the account prefix) matches answers 500 once. */
  failOnce(pattern: RegExp): void;
  close(): Promise<void>;
}

type Handler = (ctx: { params: string[]; query: URLSearchParams; body: Buffer; req: IncomingMessage }) => unknown | Promise<unknown>;

class ApiError extends Error {
  readonly status: number;
  readonly code: number;
  constructor(status: number, code: number, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const json = (body: Buffer) => (body.length ? JSON.parse(body.toString("utf8")) : {});
const now = () => new Date().toISOString();

/** A multipart/form-data body split into its parts (wrangler's script upload: metadata, modules, source maps). */
function multipart(req: IncomingMessage, body: Buffer): Array<{ name: string; filename?: string; data: Buffer }> {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(req.headers["content-type"] ?? "");
  if (!boundary) throw new ApiError(400, 10000, "expected multipart/form-data");
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const parts: Array<{ name: string; filename?: string; data: Buffer }> = [];
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === "--") break;
    const next = body.indexOf(delimiter, start);
    const part = body.subarray(start + 2, next === -1 ? body.length : next - 2);
    const headerEnd = part.indexOf("\r\n\r\n");
    const headers = part.subarray(0, headerEnd).toString("utf8");
    const name = /name="([^"]*)"/.exec(headers)?.[1] ?? "";
    const filename = /filename="([^"]*)"/.exec(headers)?.[1];
    parts.push({ name, filename, data: part.subarray(headerEnd + 4) });
    at = next;
  }
  return parts;
}

/** Starts the fake on an ephemeral port. */
export async function startFakeCloudflare(accountId = "f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6"): Promise<FakeCloudflare> {
  const calls: Call[] = [];
  const failures: RegExp[] = [];
  const databases = new Map<string, Database>();
  const queues = new Map<string, Queue>();
  const buckets = new Map<string, { name: string; creation_date: string }>();
  const indexes = new Map<string, { name: string; config: { dimensions: number; metric: string }; created_on: string }>();
  const scripts = new Map<string, UploadedScript>();
  const subdomain = "fake-account";
  const assets = new Set<string>();
  // Upload and completion tokens look like the JWTs wrangler decodes (it reads `exp` and its upload mode from them).
  const jwt = (claims: Record<string, unknown>) =>
    ["{}", JSON.stringify({ exp: Math.floor(Date.now() / 1000) + 3600, ...claims }), "sig"]
      .map((part) => Buffer.from(part).toString("base64url"))
      .join(".");

  const dbByIdOrName = (idOrName: string) => {
    const db = databases.get(idOrName) ?? [...databases.values()].find((d) => d.name === idOrName);
    if (!db) throw new ApiError(404, 7404, `The database ${idOrName} could not be found`);
    return db;
  };
  const dbInfo = (d: Database) => ({
    uuid: d.uuid,
    name: d.name,
    created_at: d.created_at,
    version: "production",
    num_tables: 0,
    file_size: 0,
    running_in_region: "WNAM",
  });
  const queueById = (id: string) => {
    const q = queues.get(id) ?? [...queues.values()].find((x) => x.queue_name === id);
    if (!q) throw new ApiError(404, 11000, `Queue ${id} does not exist`);
    return q;
  };
  const script = (name: string) => {
    let s = scripts.get(name);
    if (!s) {
      s = { metadata: {}, modules: [], secrets: new Map(), schedules: [], uploads: 0, workersDev: false };
      scripts.set(name, s);
    }
    return s;
  };
  const existingScript = (name: string) => {
    const s = scripts.get(name);
    if (!s || s.uploads === 0) throw new ApiError(404, 10007, `This Worker (${name}) does not exist on your account.`);
    return s;
  };

  /**
   * A Worker upload (a whole script, or a version of one): the multipart metadata and modules. Secrets ride in it as
   * secret_text bindings and are kept on the script, never listed back; the ones not sent stay as they were when
   * the upload says to keep them (a version always does).
   */
  const upload = (name: string, req: IncomingMessage, body: Buffer, version: boolean) => {
    const parts = multipart(req, body);
    const metadataPart = parts.find((p) => p.name === "metadata");
    if (!metadataPart) throw new ApiError(400, 10021, "metadata is required");
    const metadata = JSON.parse(metadataPart.data.toString("utf8")) as UploadedScript["metadata"];
    if (version) existingScript(name);
    const s = script(name);
    const keep = version || (metadata.keep_bindings ?? []).includes("secret_text");
    if (!keep) s.secrets = new Map();
    for (const b of metadata.bindings ?? []) if (b.type === "secret_text") s.secrets.set(b.name, String(b.text));
    s.metadata = { ...metadata, bindings: (metadata.bindings ?? []).filter((b) => b.type !== "secret_text" && b.type !== "inherit") };
    s.modules = parts.filter((p) => p.name !== "metadata").map((p) => p.filename ?? p.name);
    const migrations = metadata.migrations as { new_tag?: string } | undefined;
    if (migrations?.new_tag) s.migrationTag = migrations.new_tag;
    s.uploads++;
    return s;
  };

  /** Runs D1's /query: every statement of `sql`, one result per statement, as one transaction. */
  const query = (db: Database, sql: string, params: unknown[] = []) => {
    const statements = splitStatements(sql);
    const results: unknown[] = [];
    db.sql.exec("BEGIN");
    try {
      for (const statement of statements) {
        const prepared = db.sql.prepare(statement);
        const started = performance.now();
        const rows = prepared.columns().length
          ? prepared.all(...(params as never[]))
          : (prepared.run(...(params as never[])), [] as unknown[]);
        results.push({
          results: rows,
          success: true,
          meta: { duration: performance.now() - started, changes: 0, last_row_id: 0, rows_read: 0, rows_written: 0, served_by: "fake" },
        });
      }
      db.sql.exec("COMMIT");
    } catch (err) {
      db.sql.exec("ROLLBACK");
      throw new ApiError(400, 7500, `${String((err as Error).message)}: SQLITE_ERROR`);
    }
    return results;
  };

  const routes: Array<[string, RegExp, Handler]> = [
    // Who the token is: wrangler checks it before account-scoped calls when it has to.
    ["GET", /^\/user\/tokens\/verify$/, () => ({ id: "fake-token", status: "active" })],
    ["GET", /^\/user$/, () => ({ id: "fake-user", email: "deployer@example.test" })],
    ["GET", /^\/memberships$/, () => [{ id: "m", account: { id: accountId, name: "Fake account" } }]],
    ["GET", /^\/accounts$/, () => [{ id: accountId, name: "Fake account" }]],

    // D1
    [
      "GET",
      /^\/d1\/database$/,
      ({ query: q }) => {
        const name = q.get("name");
        const all = [...databases.values()].filter((d) => !name || d.name === name).map(dbInfo);
        const perPage = Number(q.get("per_page") ?? 100);
        const page = Number(q.get("page") ?? 1);
        return all.slice((page - 1) * perPage, page * perPage);
      },
    ],
    [
      "POST",
      /^\/d1\/database$/,
      ({ body }) => {
        const { name } = json(body);
        if ([...databases.values()].some((d) => d.name === name)) throw new ApiError(400, 7502, `A database with that name already exists`);
        const d: Database = { uuid: randomUUID(), name, created_at: now(), sql: new DatabaseSync(":memory:") };
        databases.set(d.uuid, d);
        return dbInfo(d);
      },
    ],
    ["GET", /^\/d1\/database\/([^/]+)$/, ({ params }) => dbInfo(dbByIdOrName(params[0]!))],
    [
      "POST",
      /^\/d1\/database\/([^/]+)\/query$/,
      ({ params, body }) => {
        const { sql, params: binds } = json(body);
        return query(dbByIdOrName(params[0]!), sql, binds);
      },
    ],

    // Queues
    [
      "GET",
      /^\/queues$/,
      ({ query: q }) => {
        const name = q.get("name");
        return [...queues.values()].filter((x) => !name || x.queue_name === name).map(({ consumers, ...rest }) => ({ ...rest, consumers }));
      },
    ],
    [
      "POST",
      /^\/queues$/,
      ({ body }) => {
        const { queue_name } = json(body);
        if ([...queues.values()].some((x) => x.queue_name === queue_name))
          throw new ApiError(409, 11009, "A queue with this name already exists");
        const q: Queue = { queue_id: randomUUID().replaceAll("-", ""), queue_name, created_on: now(), modified_on: now(), consumers: [] };
        queues.set(q.queue_id, q);
        return { ...q, consumers_total_count: 0, producers_total_count: 0 };
      },
    ],
    ["GET", /^\/queues\/([^/]+)$/, ({ params }) => queueById(params[0]!)],
    ["GET", /^\/queues\/([^/]+)\/consumers$/, ({ params }) => queueById(params[0]!).consumers],
    [
      "POST",
      /^\/queues\/([^/]+)\/consumers$/,
      ({ params, body }) => {
        const q = queueById(params[0]!);
        const { script_name, ...rest } = json(body);
        if (q.consumers.length) throw new ApiError(409, 11004, "This queue already has a consumer");
        const c = { consumer_id: randomUUID().replaceAll("-", ""), script: script_name, ...rest };
        q.consumers.push(c);
        return c;
      },
    ],
    [
      "PUT",
      /^\/queues\/([^/]+)\/consumers\/([^/]+)$/,
      ({ params, body }) => {
        const q = queueById(params[0]!);
        const i = q.consumers.findIndex((c) => c.consumer_id === params[1]);
        if (i < 0) throw new ApiError(404, 11000, "Consumer not found");
        const { script_name, ...rest } = json(body);
        q.consumers[i] = { ...q.consumers[i]!, ...rest, script: script_name ?? q.consumers[i]!.script, consumer_id: params[1]! };
        return q.consumers[i];
      },
    ],

    // R2
    ["GET", /^\/r2\/buckets$/, () => ({ buckets: [...buckets.values()] })],
    [
      "POST",
      /^\/r2\/buckets$/,
      ({ body }) => {
        const { name } = json(body);
        if (buckets.has(name)) throw new ApiError(409, 10004, "The bucket you tried to create already exists");
        const b = { name, creation_date: now() };
        buckets.set(name, b);
        return b;
      },
    ],
    [
      "GET",
      /^\/r2\/buckets\/([^/]+)$/,
      ({ params }) => {
        const b = buckets.get(params[0]!);
        if (!b) throw new ApiError(404, 10006, "The specified bucket does not exist");
        return b;
      },
    ],

    // Vectorize
    ["GET", /^\/vectorize\/v2\/indexes$/, () => [...indexes.values()]],
    [
      "POST",
      /^\/vectorize\/v2\/indexes$/,
      ({ body }) => {
        const { name, config } = json(body);
        if (indexes.has(name)) throw new ApiError(409, 3002, "vectorize.index.duplicate_name");
        const index = { name, config: { dimensions: config?.dimensions, metric: config?.metric }, created_on: now() };
        indexes.set(name, index);
        return index;
      },
    ],
    [
      "GET",
      /^\/vectorize\/v2\/indexes\/([^/]+)$/,
      ({ params }) => {
        const index = indexes.get(params[0]!);
        if (!index) throw new ApiError(404, 3000, "vectorize.index.not_found");
        return index;
      },
    ],

    // Workers
    [
      "GET",
      /^\/workers\/services\/([^/]+)$/,
      ({ params }) => {
        const s = existingScript(params[0]!);
        return {
          id: params[0],
          default_environment: {
            environment: "production",
            script: { id: params[0], tag: "fake", migration_tag: s.migrationTag, etag: String(s.uploads) },
          },
        };
      },
    ],
    [
      "GET",
      /^\/workers\/scripts\/([^/]+)\/secrets$/,
      ({ params }) => [...existingScript(params[0]!).secrets.keys()].map((name) => ({ name, type: "secret_text" })),
    ],
    [
      "PUT",
      /^\/workers\/scripts\/([^/]+)\/secrets$/,
      ({ params, body }) => {
        const { name, text } = json(body);
        existingScript(params[0]!).secrets.set(name, text);
        return { name, type: "secret_text" };
      },
    ],
    ["GET", /^\/workers\/subdomain$/, () => ({ subdomain })],
    [
      "GET",
      /^\/workers\/scripts\/([^/]+)\/deployments$/,
      ({ params }) => {
        const s = existingScript(params[0]!);
        return {
          deployments: [
            {
              id: `deployment-${s.uploads}`,
              source: "wrangler",
              strategy: "percentage",
              created_on: now(),
              versions: [{ version_id: `version-${s.uploads}`, percentage: 100 }],
            },
          ],
        };
      },
    ],
    [
      "POST",
      /^\/workers\/scripts\/([^/]+)\/assets-upload-session$/,
      ({ body }) => {
        const manifest = json(body).manifest as Record<string, { hash: string; size: number }>;
        const missing = [...new Set(Object.values(manifest).map((m) => m.hash))].filter((h) => !assets.has(h));
        return missing.length ? { jwt: jwt({ kind: "upload" }), buckets: [missing] } : { jwt: jwt({ kind: "completion" }), buckets: [] };
      },
    ],
    [
      "POST",
      /^\/workers\/assets\/upload$/,
      ({ req, body }) => {
        for (const part of multipart(req, body)) assets.add(part.name);
        return { jwt: jwt({ kind: "completion" }) };
      },
    ],
    [
      "PUT",
      /^\/workers\/scripts\/([^/]+)$/,
      ({ params, req, body }) => {
        const s = upload(params[0]!, req, body, false);
        return {
          id: params[0],
          etag: `etag-${s.uploads}`,
          startup_time_ms: 12,
          has_modules: true,
          deployment_id: `deployment-${s.uploads}`,
        };
      },
    ],
    // A Worker that exists gets a new version, then a deployment of it.
    [
      "POST",
      /^\/workers\/scripts\/([^/]+)\/versions$/,
      ({ params, req, body }) => {
        const s = upload(params[0]!, req, body, true);
        return {
          id: `version-${s.uploads}`,
          number: s.uploads,
          startup_time_ms: 12,
          resources: { script: { etag: `etag-${s.uploads}` }, bindings: s.metadata.bindings },
        };
      },
    ],
    [
      "POST",
      /^\/workers\/scripts\/([^/]+)\/deployments$/,
      ({ params, body }) => {
        existingScript(params[0]!);
        return { id: randomUUID(), source: "wrangler", strategy: "percentage", created_on: now(), ...json(body) };
      },
    ],
    [
      "PATCH",
      /^\/workers\/scripts\/([^/]+)\/script-settings$/,
      ({ params, body }) => {
        existingScript(params[0]!);
        return json(body);
      },
    ],
    [
      "GET",
      /^\/workers\/workers\/([^/]+)$/,
      ({ params }) => {
        const s = existingScript(params[0]!);
        return { id: params[0], name: params[0], subdomain: { enabled: s.workersDev, previews_enabled: false } };
      },
    ],
    [
      "POST",
      /^\/workers\/scripts\/([^/]+)\/subdomain$/,
      ({ params, body }) => {
        const s = existingScript(params[0]!);
        const { enabled, previews_enabled } = json(body);
        s.workersDev = Boolean(enabled);
        return { enabled: s.workersDev, previews_enabled: Boolean(previews_enabled) };
      },
    ],
    [
      "PUT",
      /^\/workers\/scripts\/([^/]+)\/schedules$/,
      ({ params, body }) => {
        const s = existingScript(params[0]!);
        s.schedules = (json(body) as Array<{ cron: string }>).map((x) => x.cron);
        return { schedules: s.schedules.map((cron) => ({ cron, created_on: now(), modified_on: now() })) };
      },
    ],
  ];

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? "/", "http://fake");
    const full = url.pathname.replace(/^\/client\/v4/, "");
    const path = full.replace(new RegExp(`^/accounts/${accountId}(?=/)`), "");
    const method = req.method ?? "GET";
    let status = 200;
    let payload: unknown;
    try {
      const failure = failures.findIndex((f) => f.test(`${method} ${path}`));
      if (failure >= 0) {
        failures.splice(failure, 1);
        throw new ApiError(500, 10013, "An unknown error occurred (injected by the test)");
      }
      const route = routes.find(([m, re]) => m === method && re.test(path));
      if (!route) throw new ApiError(404, 7003, `No route for ${method} ${full} in the fake Cloudflare API`);
      const params = route[1].exec(path)!.slice(1).map(decodeURIComponent);
      const result = await route[2]({ params, query: url.searchParams, body, req });
      payload = { success: true, errors: [], messages: [], result };
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(500, 10000, String((err as Error)?.stack ?? err));
      status = e.status;
      payload = { success: false, errors: [{ code: e.code, message: e.message }], messages: [], result: null };
    }
    calls.push({ method, path, status });
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(payload));
  });
  // Connections kept open while a deploy runs wrangler for a minute, as the real API's are.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/client/v4`,
    accountId,
    calls,
    databases,
    queues,
    buckets,
    indexes,
    scripts,
    changes: () => calls.filter((c) => c.method !== "GET" && c.status < 400).map((c) => `${c.method} ${c.path}`),
    database: (name) => [...databases.values()].find((d) => d.name === name)?.sql,
    failOnce: (pattern) => void failures.push(pattern),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
