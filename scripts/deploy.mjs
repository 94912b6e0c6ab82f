// npm run deploy [-- [environment] [--secrets-file FILE] [--plan] [--smoke-origin URL] [wrangler deploy arguments]]
//
// From an empty account to an answering deployment, and safe to run again after any failure: every step looks before
// it changes anything.
//   1. Preflight, before any change: the configuration guard, the API credentials, and every secret the environment
//      requires (`secrets.required` in wrangler.toml) present in the secrets file or already set on the Worker.
//   2. Each resource the environment binds, found by name and created only when missing: D1 databases, queues
//      (dead-letter queues too), R2 buckets, the Vectorize index (its dimensions those of the embedding model).
//   3. The migrations, by wrangler: the directory's to the directory, the tenant set to every shard.
//   4. `wrangler deploy --env <environment>` with the secrets file; arguments it does not know go on to it.
//   5. A smoke check of the deployed origin (APP_URL, or --smoke-origin): it fails loudly when one answer is wrong.
// --plan prints what it would create, reuse and skip, and runs `wrangler deploy --dry-run`, changing nothing.
import { existsSync, readFileSync } from "node:fs";
import { unstable_readConfig as readConfig } from "wrangler";
import { CloudflareApiError, cloudflareApi } from "./cloudflare-api.mjs";
import { configProblem, varFromArgs } from "./config-guard.mjs";
import { wrangler } from "./wrangler.mjs";

/** The Vectorize index each embedding model needs (src/ai: the document embeddings). */
export const EMBEDDING_INDEXES = {
  "@cf/baai/bge-small-en-v1.5": { dimensions: 384, metric: "cosine" },
  "@cf/baai/bge-base-en-v1.5": { dimensions: 768, metric: "cosine" },
  "@cf/baai/bge-large-en-v1.5": { dimensions: 1024, metric: "cosine" },
};

/** Our flags and the environment (the first bare word); anything else is wrangler deploy's. */
export function parseDeployArgs(argv) {
  const parsed = { environment: undefined, secretsFile: undefined, plan: false, smokeOrigin: undefined, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const value = () => (eq > 0 ? arg.slice(eq + 1) : argv[++i]);
    if (arg === "--") continue;
    if (flag === "--secrets-file") parsed.secretsFile = value();
    else if (flag === "--smoke-origin") parsed.smokeOrigin = value();
    else if (flag === "--plan") parsed.plan = true;
    else if (!arg.startsWith("-") && parsed.environment === undefined && parsed.rest.length === 0) parsed.environment = arg;
    else parsed.rest.push(arg);
  }
  parsed.environment ??= "production";
  return parsed;
}

/** The names a secrets file gives (JSON object, or .env lines). */
export function secretNamesIn(text) {
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return Object.keys(parsed);
  } catch {
    // .env format
  }
  return [...text.matchAll(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/gm)].map((m) => m[1]);
}

/** What the environment binds, by kind, as names the API knows. */
export function wantedResources(config) {
  const queues = new Set();
  for (const p of config.queues?.producers ?? []) queues.add(p.queue);
  for (const c of config.queues?.consumers ?? []) {
    queues.add(c.queue);
    if (c.dead_letter_queue) queues.add(c.dead_letter_queue);
  }
  return {
    databases: (config.d1_databases ?? []).map((d) => d.database_name),
    queues: [...queues],
    buckets: (config.r2_buckets ?? []).map((b) => b.bucket_name),
    indexes: (config.vectorize ?? []).map((v) => v.index_name),
  };
}

class Refused extends Error {}

/** The answers a deployment must give; the problems, or an empty list. */
export async function smokeCheck(origin) {
  const problems = [];
  const check = async (what, path, init, expect) => {
    try {
      const res = await fetch(new URL(path, origin), { ...init, redirect: "manual", signal: AbortSignal.timeout(15_000) });
      const body = await res.text();
      const problem = expect(res, body);
      if (problem) problems.push(`${what} (${init?.method ?? "GET"} ${path}): ${problem}`);
    } catch (err) {
      problems.push(`${what} (${init?.method ?? "GET"} ${path}): ${err.message}`);
    }
  };
  const jsonWith = (keys) => (res, body) => {
    if (res.status !== 200) return `answered ${res.status}`;
    try {
      const doc = JSON.parse(body);
      const missing = keys.filter((k) => doc[k] === undefined);
      return missing.length ? `no ${missing.join(", ")}` : null;
    } catch {
      return "not JSON";
    }
  };
  await check(
    "authorization-server metadata",
    "/.well-known/oauth-authorization-server",
    undefined,
    jsonWith(["issuer", "token_endpoint"]),
  );
  await check(
    "protected-resource metadata",
    "/.well-known/oauth-protected-resource/mcp",
    undefined,
    jsonWith(["resource", "authorization_servers"]),
  );
  await check("the API document", "/openapi.json", undefined, (res, body) => {
    if (res.status !== 200) return `answered ${res.status}`;
    try {
      return JSON.parse(body).openapi?.startsWith("3.") ? null : "not an OpenAPI 3 document";
    } catch {
      return "not JSON";
    }
  });
  // An MCP request without a token: the endpoint is there and asks for OAuth, naming where to find it.
  await check(
    "the MCP endpoint",
    "/mcp",
    {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    },
    (res) =>
      res.status !== 401
        ? `answered ${res.status}, not 401`
        : /resource_metadata=/.test(res.headers.get("www-authenticate") ?? "")
          ? null
          : "its 401 names no resource_metadata",
  );
  await check("a public reviews feed", `/api/public/reviews/smoke-check-${Date.now()}`, undefined, (res) =>
    res.status === 404 ? null : `answered ${res.status} for an unknown agent, not 404`,
  );
  return problems;
}

async function main() {
  const args = parseDeployArgs(process.argv.slice(2));
  const { environment, secretsFile, plan, rest } = args;
  const config = readConfig({ config: "wrangler.toml", env: environment });
  if (!config.definedEnvironments?.includes(environment)) throw new Refused(`wrangler.toml has no [env.${environment}]`);
  const vars = config.vars ?? {};
  const say = (line) => console.log(line);

  // 1. Preflight: nothing below changes anything until all of it holds.
  const problem = configProblem({ args: rest, vars, environment: vars.ENVIRONMENT ?? "production" });
  if (problem) throw new Refused(problem);
  const api = cloudflareApi();
  if (api.missing) {
    throw new Refused(
      `${api.missing.join(" and ")} must be set: an API token with Workers Scripts, D1, Queues, Workers R2 Storage and Vectorize edit permissions, and its account's id (docs/operations.md "Deploy").`,
    );
  }
  if (secretsFile && !existsSync(secretsFile)) throw new Refused(`--secrets-file ${secretsFile}: no such file`);
  const inFile = secretsFile ? secretNamesIn(readFileSync(secretsFile, "utf8")) : [];
  const required = config.secrets?.required ?? [];
  const onWorker = required.every((name) => inFile.includes(name)) ? [] : await api.secretNames(config.name);
  const missingSecrets = required.filter((name) => !inFile.includes(name) && !onWorker.includes(name));
  if (missingSecrets.length) {
    throw new Refused(
      `secrets the ${environment} Worker requires are neither in ${secretsFile ?? "a --secrets-file"} nor set on it: ${missingSecrets.join(", ")} (README.md "Deploy" says how to make each)`,
    );
  }
  const embedding = EMBEDDING_INDEXES[vars.AI_EMBEDDING_MODEL ?? "@cf/baai/bge-base-en-v1.5"];
  if (!embedding) throw new Refused(`AI_EMBEDDING_MODEL ${vars.AI_EMBEDDING_MODEL}: no index shape known for it (scripts/deploy.mjs)`);

  // 2. Resources, by name.
  const wanted = wantedResources(config);
  const report = { created: [], reused: [], skipped: [] };
  const ensure = async (kind, names, exists, create) => {
    for (const name of names) {
      if (await exists(name)) report.reused.push(`${kind} ${name}`);
      else if (plan) report.created.push(`${kind} ${name} (would be created)`);
      else {
        await create(name);
        report.created.push(`${kind} ${name}`);
      }
    }
  };
  const databases = new Set((await api.databases()).map((d) => d.name));
  await ensure("D1 database", wanted.databases, (n) => databases.has(n), api.createDatabase);
  const queues = new Set((await api.queues()).map((q) => q.queue_name));
  await ensure("queue", wanted.queues, (n) => queues.has(n), api.createQueue);
  await ensure("R2 bucket", wanted.buckets, async (n) => (await api.bucket(n)) !== undefined, api.createBucket);
  await ensure(
    "Vectorize index",
    wanted.indexes,
    async (n) => {
      const index = await api.index(n);
      if (index && (index.config?.dimensions !== embedding.dimensions || index.config?.metric !== embedding.metric)) {
        throw new Refused(
          `Vectorize index ${n} has ${index.config?.dimensions} dimensions (${index.config?.metric}); ${vars.AI_EMBEDDING_MODEL} needs ${embedding.dimensions} (${embedding.metric})`,
        );
      }
      return index !== undefined;
    },
    (n) => api.createIndex(n, embedding),
  );

  for (const [what, lines] of Object.entries(report)) if (lines.length) say(`${what}:\n${lines.map((l) => `  ${l}`).join("\n")}`);

  // 3. Migrations, each database by wrangler (it records what it applied in the database's d1_migrations).
  for (const { binding } of config.d1_databases ?? []) {
    if (plan) {
      report.skipped.push(`migrations of ${binding} (a plan applies none)`);
      continue;
    }
    wrangler(["d1", "migrations", "apply", binding, "--remote", "--env", environment], { stream: true });
  }

  // 4. The Worker. An unset APP_URL is the Worker's workers.dev origin.
  let appUrl = varFromArgs(rest, "APP_URL") || vars.APP_URL || undefined;
  const extra = [];
  if (!appUrl) {
    appUrl = `https://${config.name}.${await api.subdomain()}.workers.dev`;
    extra.push("--var", `APP_URL:${appUrl}`);
  }
  if (plan) {
    say(`skipped:\n${report.skipped.map((l) => `  ${l}`).join("\n")}`);
    wrangler(["deploy", "--env", environment, "--dry-run", ...extra, ...rest], { stream: true });
    say(`\nPlan only: nothing was changed. The deployment would answer at ${appUrl}.`);
    return;
  }
  wrangler(["deploy", "--env", environment, ...(secretsFile ? ["--secrets-file", secretsFile] : []), ...extra, ...rest], { stream: true });

  // 5. Smoke check.
  const origin = args.smokeOrigin ?? appUrl;
  const problems = await smokeCheck(origin);
  if (problems.length) {
    throw new Error(`the deployment at ${origin} does not answer as it should:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
  say(`\nSmoke check passed at ${origin}: OAuth metadata, /openapi.json, the MCP endpoint and a public feed answer as they should.`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    if (err instanceof Refused) console.error(`\nRefusing to deploy: ${err.message}\n`);
    else if (err instanceof CloudflareApiError)
      console.error(
        `\nDeploy stopped: the Cloudflare API ${err.message}\nRun it again once that is fixed: every step looks before it changes anything.\n`,
      );
    else console.error(`\nDeploy stopped: ${err.message}\nRun it again once that is fixed: every step looks before it changes anything.\n`);
    process.exit(1);
  });
}
