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
 *   POST /ai {token?, script?, chat?, dimensions?, reverseEmbeddings?}  → {id, url}: an OpenAI-compatible AI gateway
 *   POST /ai/<id>/chat/completions, POST /ai/<id>/embeddings  bearer token checked; each request takes the next
 *        scripted answer ({status?, body?} sent as is, or {content} as a chat completion), then the defaults: chat
 *        answers `chat` (default "{}"), embeddings a hashed bag-of-words vector (see fakeEmbedding)
 *   GET  /ai/<id>/requests  → {requests: [{path, headers, body}]}: what the gateway was asked, bodies parsed
 *   POST /client-documents {body, status?, headers?, chunked?}  → {id, url}: an OAuth client's metadata document at
 *        `url` (…/client-documents/<id>/client.json); `body` (an object is sent as JSON) with every "{self}" replaced by
 *        `url`, so a document can name its own address as client_id; `chunked` sends it without Content-Length
 *   POST /client-documents/<id>  the same options: the document changes
 *   GET  /client-documents/<id>/client.json  the document; GET /client-documents/<id>/hits → {hits}: how often it was read
 *   POST /pdftool  body: {tool, args, pdf (base64)} → {code, stdout, stderr, out}: one of poppler's tools or qpdf run on
 *        the PDF, `{in}` and `{out}` in args standing for its file and an output file (returned in base64 when written)
 *   POST /poppler  body: a PDF in base64 → {text, sig}: what poppler's pdftotext and pdfsig print for it (workerd
 *        cannot run a program; the tests judge a sealed PDF with the tools a third party would use)
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { TestProject } from "vitest/node";

/** The programs POST /pdftool runs: the PDF tools a third party judges our PDFs with, and qpdf to make test fixtures. */
const PDF_TOOLS = new Set(["pdftotext", "pdffonts", "pdfsig", "pdfinfo", "qpdf"]);

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

/**
 * One scripted answer of the fake AI gateway: a raw `{status, body}` (a string body is sent as is, an object as JSON),
 * or a chat completion carrying `content`; `delayMs` holds the answer back (alone: the default answer, late).
 */
interface AiAnswer {
  status?: number;
  body?: unknown;
  content?: string;
  delayMs?: number;
}

interface AiGatewayFake {
  token: string;
  script: AiAnswer[];
  chat: string;
  dimensions: number;
  reverseEmbeddings: boolean;
  requests: { path: string; headers: IncomingMessage["headers"]; body: unknown }[];
}

const STOPWORDS = new Set("a an and are as at be by for from in is it of on or the to with".split(" "));

/**
 * The fake gateway's embedding: a bag of words hashed (FNV-1a) into `dimensions` non-negative counts, L2-normalized.
 * Deterministic, and texts sharing words get a higher cosine similarity (always within [0, 1]); a text without words
 * hashes as the empty word, so no vector is all zeros.
 */
export function fakeEmbedding(text: string, dimensions: number): number[] {
  const words = (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => !STOPWORDS.has(w));
  const v = new Array<number>(dimensions).fill(0);
  for (const word of words.length ? words : [""]) {
    let h = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193) >>> 0;
    v[h % dimensions]! += 1;
  }
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

interface ClientDocument {
  body: string;
  status: number;
  headers: Record<string, string>;
  chunked: boolean;
  hits: number;
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
  const gateways = new Map<string, AiGatewayFake>();
  const documents = new Map<string, ClientDocument>();
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
      mailboxes.set(mailboxId, {
        script: opts.script ?? [],
        fallback: opts.fallback ?? 200,
        location: opts.location,
        record: opts.record ?? true,
        count: 0,
        requests: [],
      });
      return send(201, { id: mailboxId, url: `http://127.0.0.1:${port}/hooks/${mailboxId}` });
    }
    if (kind === "mailboxes" && id && mailboxes.has(id))
      return send(200, { count: mailboxes.get(id)!.count, requests: mailboxes.get(id)!.requests });
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
    if (req.method === "POST" && url.pathname === "/ai") {
      const opts = (body ? JSON.parse(body) : {}) as {
        token?: string;
        script?: AiAnswer[];
        chat?: string;
        dimensions?: number;
        reverseEmbeddings?: boolean;
      };
      const gatewayId = `a${++next}`;
      gateways.set(gatewayId, {
        token: opts.token ?? "ai-test-token",
        script: opts.script ?? [],
        chat: opts.chat ?? "{}",
        dimensions: opts.dimensions ?? 256,
        reverseEmbeddings: opts.reverseEmbeddings ?? false,
        requests: [],
      });
      return send(201, { id: gatewayId, url: `http://127.0.0.1:${port}/ai/${gatewayId}` });
    }
    if (kind === "ai" && id && gateways.has(id)) {
      const gateway = gateways.get(id)!;
      const operation = url.pathname.split("/").slice(3).join("/");
      if (req.method === "GET" && operation === "requests") return send(200, { requests: gateway.requests });
      let parsed: unknown = body;
      try {
        parsed = JSON.parse(body);
      } catch {
        // recorded as the raw text
      }
      gateway.requests.push({ path: operation, headers: req.headers, body: parsed });
      // OpenAI's error body: {error: {message, type, code}}.
      const openAiError = (status: number, type: string, message: string) => send(status, { error: { message, type, code: null } });
      if (req.headers.authorization !== `Bearer ${gateway.token}`)
        return openAiError(401, "invalid_request_error", "Incorrect API key provided");
      if (req.method !== "POST" || (operation !== "chat/completions" && operation !== "embeddings"))
        return openAiError(404, "invalid_request_error", `Unknown operation ${operation}`);
      const scripted = gateway.script.shift();
      if (scripted?.delayMs) await new Promise((resolve) => setTimeout(resolve, scripted.delayMs));
      const request = (parsed ?? {}) as { model?: string; input?: string | string[] };
      if (scripted && (scripted.status !== undefined || scripted.body !== undefined)) {
        res.writeHead(scripted.status ?? 200, { "content-type": typeof scripted.body === "string" ? "text/plain" : "application/json" });
        return res.end(typeof scripted.body === "string" ? scripted.body : JSON.stringify(scripted.body ?? {}));
      }
      if (operation === "chat/completions") {
        const content = scripted?.content ?? gateway.chat;
        return send(200, {
          id: `chatcmpl-${gateway.requests.length}`,
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: request.model ?? "fake",
          choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        });
      }
      if (request.input === undefined) return openAiError(400, "invalid_request_error", "'input' is a required property");
      const inputs = typeof request.input === "string" ? [request.input] : request.input;
      const data = inputs.map((text, index) => ({
        object: "embedding",
        index,
        embedding: fakeEmbedding(String(text), gateway.dimensions),
      }));
      if (gateway.reverseEmbeddings) data.reverse();
      return send(200, { object: "list", data, model: request.model ?? "fake", usage: { prompt_tokens: 0, total_tokens: 0 } });
    }
    if (req.method === "POST" && (url.pathname === "/client-documents" || (kind === "client-documents" && id && documents.has(id)))) {
      const opts = JSON.parse(body) as { body: unknown; status?: number; headers?: Record<string, string>; chunked?: boolean };
      const documentId = id ?? `d${++next}`;
      const documentUrl = `http://127.0.0.1:${port}/client-documents/${documentId}/client.json`;
      const text = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      documents.set(documentId, {
        body: text.replaceAll("{self}", documentUrl),
        status: opts.status ?? 200,
        headers: opts.headers ?? {},
        chunked: opts.chunked ?? false,
        hits: documents.get(documentId)?.hits ?? 0,
      });
      return send(201, { id: documentId, url: documentUrl });
    }
    if (kind === "client-documents" && id && documents.has(id)) {
      const doc = documents.get(id)!;
      if (url.pathname.endsWith("/hits")) return send(200, { hits: doc.hits });
      doc.hits++;
      const headers = { "content-type": "application/json", ...doc.headers };
      if (!doc.chunked) {
        res.writeHead(doc.status, { ...headers, "content-length": String(Buffer.byteLength(doc.body)) });
        return res.end(doc.body);
      }
      // No Content-Length: the reader learns the size only by reading.
      res.writeHead(doc.status, headers);
      for (let i = 0; i < doc.body.length; i += 1024) res.write(doc.body.slice(i, i + 1024));
      return res.end();
    }
    if (req.method === "POST" && url.pathname === "/poppler") {
      const file = join(mkdtempSync(join(tmpdir(), "poppler-")), "document.pdf");
      writeFileSync(file, Buffer.from(body, "base64"));
      const run = promisify(execFile);
      // pdfsig exits non-zero for an unsigned or broken file; what it prints is the verdict either way.
      const sig = await run("pdfsig", [file]).catch((err: { stdout?: string; stderr?: string }) => ({
        stdout: err.stdout ?? "",
        stderr: err.stderr ?? "",
      }));
      const text = await run("pdftotext", ["-enc", "UTF-8", file, "-"]);
      return send(200, { text: text.stdout, sig: sig.stdout + sig.stderr });
    }
    if (req.method === "POST" && url.pathname === "/pdftool") {
      const { tool, args, pdf } = JSON.parse(body) as { tool: string; args: string[]; pdf: string };
      if (!PDF_TOOLS.has(tool)) return send(400, { error: `not a PDF tool: ${tool}` });
      const dir = mkdtempSync(join(tmpdir(), "pdftool-"));
      const input = join(dir, "in.pdf");
      const output = join(dir, "out.pdf");
      writeFileSync(input, Buffer.from(pdf, "base64"));
      const argv = args.map((a) => (a === "{in}" ? input : a === "{out}" ? output : a));
      const ran = await promisify(execFile)(tool, argv, { maxBuffer: 64 * 1024 * 1024 }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (err: { code?: number; stdout?: string; stderr?: string }) => ({
          code: typeof err.code === "number" ? err.code : 1,
          stdout: err.stdout ?? "",
          stderr: err.stderr ?? "",
        }),
      );
      const out = existsSync(output) ? readFileSync(output).toString("base64") : null;
      rmSync(dir, { recursive: true, force: true });
      return send(200, { ...ran, out });
    }
    if (req.method === "POST" && url.pathname === "/dns") {
      for (const [key, answer] of Object.entries(JSON.parse(body) as Record<string, { Status: number; Answer?: unknown[] }>))
        dns.set(key, answer);
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
