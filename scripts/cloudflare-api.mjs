// The few Cloudflare API v4 calls the deploy makes itself: listing and creating the account's D1 databases, queues,
// R2 buckets and Vectorize indexes, the Worker's secrets and the account's workers.dev subdomain. Wrangler makes all
// the others (migrations, the upload). Like wrangler, it reads CLOUDFLARE_API_TOKEN, CLOUDFLARE_ACCOUNT_ID and
// CLOUDFLARE_API_BASE_URL (another API, e.g. the tests' fake one).

/** An answer of the API other than success: its HTTP status and the envelope's first error code. */
export class CloudflareApiError extends Error {
  constructor(method, path, status, errors) {
    super(`${method} ${path} answered ${status}: ${errors.map((e) => `${e.message} [code: ${e.code}]`).join("; ") || "no detail"}`);
    this.status = status;
    this.code = errors[0]?.code;
  }
}

/** A client for one account, or the names of what is missing to make one. */
export function cloudflareApi(env = process.env) {
  const token = env.CLOUDFLARE_API_TOKEN;
  const accountId = env.CLOUDFLARE_ACCOUNT_ID;
  if (!token || !accountId) {
    return { missing: ["CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID"].filter((name) => !env[name]) };
  }
  const base = (env.CLOUDFLARE_API_BASE_URL || "https://api.cloudflare.com/client/v4").replace(/\/+$/, "");

  async function call(method, path, body) {
    const request = () =>
      fetch(`${base}/accounts/${accountId}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(60_000),
      });
    let res;
    for (let attempt = 1; ; attempt++) {
      try {
        res = await request();
        break;
      } catch (err) {
        // A read is asked again when the connection failed (a reused connection the other side had closed); a
        // change is not, since it may have been made: the next run of the deploy finds it.
        if (method !== "GET" || attempt >= 3) throw new Error(`${method} ${path}: ${err.cause?.message ?? err.message}`);
        await new Promise((r) => setTimeout(r, 500 * attempt));
      }
    }
    const envelope = await res.json().catch(() => ({ success: false, errors: [] }));
    if (!res.ok || envelope.success === false) throw new CloudflareApiError(method, path, res.status, envelope.errors ?? []);
    return envelope.result;
  }

  /** Every page of a list (the API pages by `page` and `per_page`; a short page is the last). */
  async function list(path) {
    const all = [];
    for (let page = 1; ; page++) {
      const sep = path.includes("?") ? "&" : "?";
      const result = await call("GET", `${path}${sep}page=${page}&per_page=100`);
      const items = Array.isArray(result) ? result : (result?.buckets ?? []);
      all.push(...items);
      if (items.length < 100) return all;
    }
  }

  /** The value of `get`, or undefined when the API answers that it does not exist. */
  async function find(path) {
    try {
      return await call("GET", path);
    } catch (err) {
      if (err instanceof CloudflareApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  return {
    accountId,
    databases: () => list("/d1/database"),
    createDatabase: (name) => call("POST", "/d1/database", { name }),
    queues: () => list("/queues"),
    createQueue: (name) => call("POST", "/queues", { queue_name: name }),
    bucket: (name) => find(`/r2/buckets/${encodeURIComponent(name)}`),
    createBucket: (name) => call("POST", "/r2/buckets", { name }),
    index: (name) => find(`/vectorize/v2/indexes/${encodeURIComponent(name)}`),
    createIndex: (name, config) => call("POST", "/vectorize/v2/indexes", { name, config }),
    /** The names of the Worker's secrets; none when the Worker has never been deployed. */
    secretNames: async (script) => {
      try {
        return (await call("GET", `/workers/scripts/${encodeURIComponent(script)}/secrets`)).map((s) => s.name);
      } catch (err) {
        if (err instanceof CloudflareApiError && err.status === 404) return [];
        throw err;
      }
    },
    subdomain: async () => (await call("GET", "/workers/subdomain")).subdomain,
  };
}
