/**
 * The one structured logger: a JSON line per call, `{level, msg, requestId?, organizationId?, ...fields}`, written to
 * the console method of its level (Workers Logs files it by that). The only `console` calls of the Worker are here.
 * Fields are given one by one, never a request or a row whole; a field whose name says it holds a credential is left
 * out at any depth (`withheld` names it), so a token or a secret cannot reach the log by a careless spread.
 */

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

/** What a logger's every line carries: the request it serves and the organization it acts for, when known. */
export interface LogContext {
  requestId?: string;
  organizationId?: string;
}

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

/** Names of fields that hold credentials (tokens, secrets, keys, signatures, cookies), whatever their case or separators. */
const SECRET_NAME = /secret|password|passwd|token|authori[sz]ation|cookie|apikey|privatekey|signature|credential|ciphertext|bearer/;

const looksSecret = (name: string) => SECRET_NAME.test(name.toLowerCase().replace(/[^a-z0-9]/g, ""));

const isPlain = (value: object) => [Object.prototype, null].includes(Object.getPrototypeOf(value));

/** `value` without the fields named like a secret (their paths go to `withheld`); errors as `loggableError` gives them. */
function scrub(value: unknown, path: string, withheld: string[], depth: number): unknown {
  if (value instanceof Error) return loggableError(value);
  if (value === null || typeof value !== "object") return value;
  if (depth > 8) return "[nested too deep]";
  if (Array.isArray(value)) return value.map((v, i) => scrub(v, `${path}[${i}]`, withheld, depth + 1));
  if (!isPlain(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const at = path ? `${path}.${k}` : k;
    if (looksSecret(k)) withheld.push(at);
    else out[k] = scrub(v, at, withheld, depth + 1);
  }
  return out;
}

/** One log line as text: what `createLogger` writes (and what a test reads back). */
export function logLine(level: LogLevel, msg: string, context: LogContext, fields: LogFields = {}): string {
  const withheld: string[] = [];
  const line = scrub({ ...context, ...fields }, "", withheld, 0) as LogFields;
  return JSON.stringify({ level, msg, ...line, ...(withheld.length ? { withheld } : {}) });
}

const WRITE: Record<LogLevel, (line: string) => void> = {
  debug: (line) => console.debug(line),
  info: (line) => console.info(line),
  warn: (line) => console.warn(line),
  error: (line) => console.error(line),
};

/**
 * A logger whose lines carry `context`: a request's service context binds its request id and organization
 * (platform/auth.ts); code with no context (a queue consumer, the cron, a Durable Object) makes one from what it has.
 */
export function createLogger(context: LogContext = {}): Logger {
  const at = (level: LogLevel) => (msg: string, fields?: LogFields) => WRITE[level](logLine(level, msg, context, fields));
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/**
 * An error as it may be logged. Drizzle's query errors carry the bound values ("params: …"), which hold contact
 * data and URLs; the log keeps the failed SQL and the database's own message, never the values.
 */
export function loggableError(err: unknown): string {
  const strip = (text: string) => text.replace(/\nparams:[^\n]*/g, "\nparams: [withheld]");
  const own = err instanceof Error ? `${err.name}: ${strip(err.message)}` : strip(String(err));
  const cause = err instanceof Error && err.cause !== undefined ? ` (cause: ${loggableError(err.cause)})` : "";
  return own + cause;
}

/** A stack trace without the first line's message (which `loggableError` already gives, withheld values and all). */
export const loggableStack = (err: unknown): string | undefined =>
  err instanceof Error && err.stack
    ? err.stack
        .split("\n")
        .filter((line) => /^\s+at /.test(line))
        .join("\n")
    : undefined;
