/** Work kept alive past the step that started it (a queue send after a commit): `ServiceContext.defer`. */
export type Defer = (work: Promise<unknown>) => void;

/**
 * Runs `run` with a deferral of its own, for work with no request to outlive (a cron task, a queue consumer, a script):
 * what `run` defers is collected and awaited before this settles, thrown or not, so nothing deferred is dropped.
 */
export async function withDeferred<T>(run: (defer: Defer) => Promise<T>): Promise<T> {
  const pending: Promise<unknown>[] = [];
  try {
    return await run((work) => void pending.push(work));
  } finally {
    // Deferred work may defer more: until none is left.
    while (pending.length > 0) await Promise.allSettled(pending.splice(0));
  }
}
