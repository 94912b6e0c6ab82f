/**
 * A per-isolate cache of values made asynchronously (imported keys) that keeps only settled values, never a pending
 * promise. Requests and Durable Objects share an isolate, and a promise whose work runs in one of them (WebCrypto
 * resolves through its owner's I/O context) cannot be awaited from another: the runtime refuses it ("Cannot perform
 * I/O on behalf of a different request / Durable Object") or the waiter hangs. So callers that miss at the same time
 * each make the value once, and the first to finish is kept for everyone after.
 */
export function settledCache<V>(limit: number): (key: string, make: () => Promise<V>) => Promise<V> {
  const values = new Map<string, V>();
  return async (key, make) => {
    const hit = values.get(key);
    if (hit !== undefined) return hit;
    const value = await make();
    // The cap only guards against unbounded growth: a handful of keys per process in production.
    if (!values.has(key) && values.size >= limit) values.clear();
    values.set(key, value);
    return value;
  };
}
