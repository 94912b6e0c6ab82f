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
