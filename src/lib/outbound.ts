/**
 * An outbound fetch with a deadline (DESIGN.md: outbound calls carry a timeout and never follow redirects to new
 * hosts). The timer is cleared as soon as the call settles: `AbortSignal.timeout` would keep one live timer per call
 * for the whole deadline, and workerd caps live timers (10,000), which a busy consumer reaches.
 * `use` runs with the response while the deadline still applies, so reading the body is covered too.
 */
export async function fetchWithDeadline<T>(
  fetchFn: typeof fetch,
  url: string,
  init: RequestInit,
  timeoutMs: number,
  use: (res: Response) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, "TimeoutError")), timeoutMs);
  try {
    return await use(await fetchFn(url, { redirect: "manual", ...init, signal: controller.signal }));
  } finally {
    clearTimeout(timer);
  }
}
