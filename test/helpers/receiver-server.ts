/// <reference types="node" />
/**
 * vitest globalSetup (runs in Node, outside workerd): a real HTTP receiver on 127.0.0.1 that tests and the Worker's
 * own queue consumer reach over the network, as a customer's endpoint would be reached.
 *
 *   POST /mailboxes {script?: number[], fallback?: number, location?: string}  → {id, url}
 *   POST /hooks/<id>    records the request (headers, raw body) and answers the next scripted status
 *   GET  /mailboxes/<id> → {requests: [{method, headers, body, receivedAt}]}
 *   POST /hooks/<anything else>  a sink answering 200
 *   GET  /dns-query?name&type  a DNS-over-HTTPS JSON endpoint answering from the `dns` table of a POST /dns body
 *   POST /turnstile/siteverify  Turnstile's siteverify: success for secret "turnstile-test-secret" and token "pass"
 *   POST /reso {token, listings, status?}  → {id, url}: a RESO Web API (OData v4) feed serving `listings` as Property
 *   GET  /reso/<id>/Property?$filter&$top  the feed: bearer token checked, `Field eq 'literal'` terms joined by `or`
 *   GET  /reso/<id>/requests  → {requests}: what the feed was asked
 */
import { createServer, type IncomingMessage } from "node:http";
import type { TestProject } from "vitest/node";

interface ResoFeed {
  token: string;
  listings: Record<string, unknown>[];
  status?: number;
  requests: { url: string; headers: IncomingMessage["headers"] }[];
}

/** An OData `$filter` of `Field eq 'literal'` terms joined by `or` (what a RESO client sends to find one listing). */
function parseODataFilter(filter: string): { field: string; value: string }[] | null {
  const terms: { field: string; value: string }[] = [];
  const term = /^\s*([A-Za-z][A-Za-z0-9]*) eq '((?:[^']|'')*)'\s*(?:or\s+|$)/;
  let rest = filter;
  while (rest.trim()) {
    const m = term.exec(rest);
    if (!m) return null;
    terms.push({ field: m[1]!, value: m[2]!.replaceAll("''", "'") });
    rest = rest.slice(m[0].length);
  }
  return terms.length ? terms : null;
}

interface Mailbox {
  script: number[];
  fallback: number;
  location?: string;
  record: boolean;
  count: number;
  requests: { method: string; headers: IncomingMessage["headers"]; body: string; receivedAt: number }[];
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
  });

export default async function startReceiver(project: TestProject) {
  const mailboxes = new Map<string, Mailbox>();
  const dns = new Map<string, { Status: number; Answer?: unknown[] }>();
  const feeds = new Map<string, ResoFeed>();
  let next = 0;
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const body = await readBody(req);
    const send = (status: number, payload?: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(payload === undefined ? "" : JSON.stringify(payload));
    };
    const [, kind, id] = url.pathname.split("/");
    if (req.method === "POST" && url.pathname === "/mailboxes") {
      const opts = body ? JSON.parse(body) : {};
      const mailboxId = `m${++next}`;
      mailboxes.set(mailboxId, { script: opts.script ?? [], fallback: opts.fallback ?? 200, location: opts.location, record: opts.record ?? true, count: 0, requests: [] });
      return send(201, { id: mailboxId, url: `http://127.0.0.1:${port}/hooks/${mailboxId}` });
    }
    if (kind === "mailboxes" && id && mailboxes.has(id)) return send(200, { count: mailboxes.get(id)!.count, requests: mailboxes.get(id)!.requests });
    if (kind === "hooks" && id && mailboxes.has(id)) {
      const box = mailboxes.get(id)!;
      box.count++;
      if (box.record) box.requests.push({ method: req.method ?? "", headers: req.headers, body, receivedAt: Date.now() });
      const status = box.script.shift() ?? box.fallback;
      return send(status, { received: true }, box.location ? { location: box.location } : {});
    }
    if (req.method === "POST" && url.pathname === "/reso") {
      const opts = JSON.parse(body) as { token: string; listings: Record<string, unknown>[]; status?: number };
      const feedId = `r${++next}`;
      feeds.set(feedId, { token: opts.token, listings: opts.listings, status: opts.status, requests: [] });
      return send(201, { id: feedId, url: `http://127.0.0.1:${port}/reso/${feedId}` });
    }
    if (kind === "reso" && id && feeds.has(id)) {
      const feed = feeds.get(id)!;
      const resource = url.pathname.split("/")[3];
      if (resource === "requests") return send(200, { requests: feed.requests });
      feed.requests.push({ url: req.url ?? "", headers: req.headers });
      const odataError = (status: number, code: string, message: string) => send(status, { error: { code, message } });
      if (req.headers.authorization !== `Bearer ${feed.token}`) return odataError(401, "Unauthorized", "A valid bearer token is required");
      if (feed.status) return odataError(feed.status, "ServerError", "The feed is failing as scripted");
      if (req.method !== "GET" || resource !== "Property") return odataError(404, "NotFound", `No resource ${resource}`);
      const terms = parseODataFilter(url.searchParams.get("$filter") ?? "");
      if (!terms) return odataError(400, "BadRequest", "Unsupported $filter");
      const top = Number(url.searchParams.get("$top") ?? "10");
      const value = feed.listings.filter((l) => terms.some((t) => l[t.field] === t.value)).slice(0, top);
      return send(200, { "@odata.context": `http://127.0.0.1:${port}/reso/${id}/$metadata#Property`, value });
    }
    if (req.method === "POST" && url.pathname === "/dns") {
      for (const [key, answer] of Object.entries(JSON.parse(body) as Record<string, { Status: number; Answer?: unknown[] }>)) dns.set(key, answer);
      return send(204);
    }
    // A Turnstile siteverify: the token "pass" passes for the secret "turnstile-test-secret", anything else fails.
    if (req.method === "POST" && url.pathname === "/turnstile/siteverify") {
      const form = new URLSearchParams(body);
      const success = form.get("secret") === "turnstile-test-secret" && form.get("response") === "pass";
      return send(200, { success, "error-codes": success ? [] : ["invalid-input-response"] });
    }
    if (url.pathname === "/dns-query") {
      if (req.headers.accept !== "application/dns-json") return send(415, { error: "accept application/dns-json" });
      const key = `${url.searchParams.get("name")}/${url.searchParams.get("type")}`;
      return send(200, dns.get(key) ?? { Status: 3 });
    }
    // Any other /hooks/<name> is a sink that acknowledges everything (route tests that only need a live endpoint).
    if (kind === "hooks") return send(200, { received: true });
    send(404, { error: "not found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  project.provide("receiverUrl", `http://127.0.0.1:${port}`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
