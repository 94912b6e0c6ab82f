import { z } from "zod";

/** Bindings declared in wrangler.toml. Vars arrive as strings; `readConfig` turns them into a typed object. */
export interface Env {
  /** The directory: organizations and their shards, members, sessions, OAuth, public link keys. */
  DB: D1Database;
  /** Tenant shards, DB_SHARD_0 … n without gaps: organization data. The others are read by name (src/shards/bindings.ts). */
  DB_SHARD_0: D1Database;
  /**
   * The Durable Objects, typed bare so this file names no class of ours: each is reached through the typed client
   * beside its class (platform/rate-limiter.ts `rateLimiterObject`, signatures/signer-client.ts `envelopeSigner`).
   */
  RATE_LIMITER: DurableObjectNamespace;
  ENVELOPE_SIGNER: DurableObjectNamespace;
  EVENTS: Queue<unknown>;
  WEBHOOK_DELIVERIES: Queue<unknown>;
  /** Import chunks (src/imports/): one message per chunk to run. */
  IMPORTS: Queue<unknown>;
  /** Organization exports (src/exports/archive.ts): one message per export job. */
  ORGANIZATION_EXPORTS: Queue<unknown>;
  DOCUMENT_VECTORS?: VectorizeIndex;
  FILES: R2Bucket;
  /** Workers static assets (assets/): the fonts the sealed PDFs embed, loaded at first use. */
  ASSETS?: Fetcher;
  AI?: Ai;

  ENVIRONMENT?: string;
  APP_URL?: string;
  DOCUMENTS_INCLUDED_PER_MONTH?: string;
  BOT_CHALLENGE_SECRET?: string;
  AI_GATEWAY_URL?: string;
  AI_GATEWAY_TOKEN?: string;
  AI_EMBEDDING_MODEL?: string;
  AI_CHAT_MODEL?: string;
  JWT_SECRET?: string;
  OAUTH_CLIENTS?: string;
  MCP_SERVER_URL?: string;
  MCP_ALLOWED_ORIGINS?: string;
  FILES_URL_SECRET?: string;
  EMAIL_PROVIDER?: string;
  EMAIL_API_KEY?: string;
  EMAIL_API_URL?: string;
  EMAIL_FROM?: string;
  MAIL_LOG_KEY?: string;
  BOT_CHALLENGE_SITE_KEY?: string;
  MLS_API_URL?: string;
  MLS_API_TOKEN?: string;
  WEBHOOK_SECRET_KEY?: string;
  SURVEY_TOKEN_KEY?: string;
  BOOKMARK_KEY?: string;
  SEAL_PRIVATE_KEY?: string;
  SEAL_CERTIFICATE?: string;
  ADMIN_TOKEN?: string;
  CREDENTIAL_RATE_LIMIT?: string;
}

const optional = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === "" ? undefined : v));

const OAuthClient = z.object({ clientId: z.string().min(1), redirectUris: z.array(z.string().min(1)).min(1) });

const ConfigSchema = z
  .object({
    ENVIRONMENT: z.enum(["development", "test", "staging", "production"]).default("production"),
    APP_URL: z.url().default("http://127.0.0.1:8787"),
    DOCUMENTS_INCLUDED_PER_MONTH: optional.pipe(z.coerce.number<string | undefined>().int().nonnegative().optional()),
    BOT_CHALLENGE_SECRET: optional,
    AI_GATEWAY_URL: optional.pipe(z.url().optional()),
    AI_GATEWAY_TOKEN: optional,
    AI_EMBEDDING_MODEL: optional,
    AI_CHAT_MODEL: optional,
    JWT_SECRET: optional,
    OAUTH_CLIENTS: optional.transform((raw, ctx) => {
      if (raw === undefined) return [];
      try {
        return z.array(OAuthClient).parse(JSON.parse(raw));
      } catch {
        ctx.addIssue({ code: "custom", message: "OAUTH_CLIENTS must be a JSON array of {clientId, redirectUris[]}" });
        return z.NEVER;
      }
    }),
    MCP_SERVER_URL: optional,
    // Origins (scheme://host[:port], comma-separated) whose pages may call the MCP endpoint besides APP_URL's own.
    MCP_ALLOWED_ORIGINS: optional.transform((raw, ctx) => {
      const origins = (raw ?? "")
        .split(",")
        .map((o) => o.trim())
        .filter(Boolean);
      for (const o of origins)
        if (!URL.canParse(o) || new URL(o).origin !== o)
          ctx.addIssue({ code: "custom", message: `MCP_ALLOWED_ORIGINS: ${o} is not an origin (scheme://host[:port])` });
      return origins;
    }),
    FILES_URL_SECRET: optional,
    // `log` keeps mail in the mail_outbox table (development, tests); `resend` sends through Resend's HTTP API.
    EMAIL_PROVIDER: optional.pipe(z.enum(["log", "resend"]).default("log")),
    EMAIL_API_KEY: optional,
    EMAIL_API_URL: optional.pipe(z.url().default("https://api.resend.com")),
    EMAIL_FROM: optional.pipe(z.string().default("Brokerage Edge <no-reply@brokerage-edge.invalid>")),
    // Encrypts the bodies the `log` provider keeps (they carry signing links); without it the links are withheld there.
    MAIL_LOG_KEY: optional,
    // Turnstile's site key, for the widget on the signing page; BOT_CHALLENGE_SECRET verifies what it produces.
    BOT_CHALLENGE_SITE_KEY: optional,
    MLS_API_URL: optional,
    MLS_API_TOKEN: optional,
    // Key material for the AES-GCM encryption of webhook signing secrets at rest (webhooks/secret-box.ts).
    WEBHOOK_SECRET_KEY: optional,
    // Encrypts an EMAIL survey's access token until the cron mails it (only its SHA-256 is kept after that).
    SURVEY_TOKEN_KEY: optional,
    // Encrypts the D1 bookmarks answers carry (platform/session.ts); unset: none are handed out.
    BOOKMARK_KEY: optional,
    // PEM (PKCS#8 key, X.509 certificate) that seal completed PDFs (src/seal/). A literal "\n" reads as a line break,
    // so a PEM fits one line of .dev.vars or a secret.
    SEAL_PRIVATE_KEY: optional.transform((v) => v?.replaceAll("\\n", "\n")),
    SEAL_CERTIFICATE: optional.transform((v) => v?.replaceAll("\\n", "\n")),
    // The bearer of the operator routes (/admin/*: shard moves); unset, they answer 503 not_configured.
    ADMIN_TOKEN: optional,
    // Requests each credential (a session, an API key, an access token) may make per window on the authenticated
    // families (platform/rate-limit.ts), as "<requests>/<seconds>".
    CREDENTIAL_RATE_LIMIT: optional.pipe(
      z
        .string()
        .regex(/^[1-9]\d{0,6}\/[1-9]\d{0,4}$/, 'CREDENTIAL_RATE_LIMIT must be "<requests>/<seconds>", e.g. "600/60"')
        .default("600/60")
        .transform((v) => ({ limit: Number(v.split("/")[0]), windowSeconds: Number(v.split("/")[1]) })),
    ),
  })
  .superRefine((config, ctx) => {
    // Production with the `log` mailer would keep every signing link, sign-in code and copy in a table, mailing nobody:
    // refused like any malformed setting rather than discovered by a signer who never got a mail.
    if (config.ENVIRONMENT === "production" && config.EMAIL_PROVIDER === "log") {
      ctx.addIssue({
        code: "custom",
        path: ["EMAIL_PROVIDER"],
        message:
          "log (mail kept in a table, never sent) is not allowed with ENVIRONMENT=production: set EMAIL_PROVIDER=resend and EMAIL_API_KEY",
      });
    }
  });

export type Config = z.infer<typeof ConfigSchema>;

/**
 * The one origin this API states (APP_URL, without a trailing slash): the OAuth issuer, links handed out, the feed's
 * cache key. Never the request's Host: a deployment reached through several names still names (and caches) one.
 */
export const appUrlOf = (config: Config): string => config.APP_URL.replace(/\/+$/, "");

/** Thrown when the deployment's vars are malformed; the error handler answers 500 with the request id. */
export class ConfigError extends Error {}

const cache = new WeakMap<object, Config>();

/**
 * The parsed, validated config. Bindings are fixed per isolate, so the parse is cached per env object; a var that
 * a route needs but is unset is that route's own clear error, never a crash here.
 */
export function readConfig(env: Env): Config {
  const hit = cache.get(env);
  if (hit) return hit;
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(`invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  }
  cache.set(env, parsed.data);
  return parsed.data;
}
