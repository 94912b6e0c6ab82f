import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createApp, type AppOptions } from "../../src/app";

/**
 * The production app (same middleware, error handler and auth) with extra routes a test mounts on it, for
 * behaviour no production route shows yet (an unexpected exception, a route of another family).
 */
export function testApp(options: AppOptions = {}, vars: Partial<Record<keyof typeof env, string>> = {}) {
  const app = createApp(options);
  // Other configuration for this app only (a new env object: the parsed config is cached per env object).
  const appEnv = { ...env, ...vars };
  /** One request; deferred work (waitUntil) has finished when it answers. */
  const send = async (request: Request) => {
    const ctx = createExecutionContext();
    const res = await app.fetch(request, appEnv, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  };
  return {
    app,
    send,
    fetch(method: string, path: string, init: { token?: string; body?: BodyInit; headers?: Record<string, string> } = {}) {
      const headers = new Headers(init.headers);
      if (init.token) headers.set("authorization", `Bearer ${init.token}`);
      return send(new Request(`http://api.test${path}`, { method, headers, body: init.body }));
    },
  };
}
