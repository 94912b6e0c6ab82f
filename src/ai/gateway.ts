import { type Env, readConfig } from "../env";
import { AppError } from "../lib/errors";
import { fetchWithDeadline } from "../lib/outbound";

/**
 * The AI gateway (DESIGN.md "Facts that shape the code"): chat completions that answer JSON, and embeddings. Two
 * implementations, picked by `configuredGateway`: an OpenAI-compatible HTTP endpoint (AI_GATEWAY_URL, bearer
 * AI_GATEWAY_TOKEN; Cloudflare AI Gateway in production) or the Workers AI binding `AI`.
 *
 * Prompts, document text and model output are never logged nor put in an error message: they are the customer's
 * documents. Errors carry the failure's kind and, for an upstream answer, its status only.
 */
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface ChatJsonOptions {
  /**
   * The JSON Schema the answer should follow. Workers AI enforces it (JSON mode `json_schema`); the OpenAI-compatible
   * client asks for `json_object` only (not every provider behind a gateway takes a schema), so the caller also puts
   * the schema in the prompt.
   */
  schema?: Record<string, unknown>;
  maxTokens?: number;
  temperature?: number;
}

export interface AiGateway {
  readonly kind: "openai-compatible" | "workers-ai";
  /** The model's answer as text, meant to be one JSON object; "" when the model gave no content. Parsing is the caller's. */
  chatJson(messages: ChatMessage[], opts?: ChatJsonOptions): Promise<string>;
  /** One vector per text, in the order of `texts` (sent in batches of EMBED_BATCH). */
  embed(texts: string[]): Promise<number[][]>;
}

export const DEFAULT_CHAT_MODEL = "@cf/meta/llama-3.1-8b-instruct";
export const DEFAULT_EMBEDDING_MODEL = "@cf/baai/bge-base-en-v1.5";
/** Texts per embeddings request: Workers AI's bge models take at most 100. */
export const EMBED_BATCH = 100;
const CHAT_TIMEOUT_MS = 30_000;
const EMBED_TIMEOUT_MS = 15_000;
const RETRY_DELAY_MS = 200;
const MAX_CHAT_RESPONSE_BYTES = 1024 * 1024;
const MAX_EMBED_RESPONSE_BYTES = 8 * 1024 * 1024;

/** Every gateway failure; a route that does not handle it answers 502/503 with the code and message below. */
export abstract class AiGatewayError extends AppError {}

export class AiGatewayNotConfigured extends AiGatewayError {
  readonly status = 503;
  readonly code = "ai_gateway_not_configured";
  constructor() {
    super("No AI gateway is configured (AI_GATEWAY_URL, or the Workers AI binding AI)");
  }
}

/** The network failed, the connection was refused, or no answer came within the deadline. */
export class AiGatewayUnreachable extends AiGatewayError {
  readonly status = 502;
  readonly code = "ai_gateway_unreachable";
  constructor(detail: string) {
    super(`The AI gateway could not be reached (${detail})`);
  }
}

/** The gateway answered with a status other than 2xx (after the one retry, for a 5xx). */
export class AiGatewayStatusError extends AiGatewayError {
  readonly status = 502;
  readonly code = "ai_gateway_error";
  constructor(readonly upstreamStatus: number) {
    super(`The AI gateway answered HTTP ${upstreamStatus}`);
  }
}

/** A 2xx answer that is not what the protocol says: not JSON, the wrong shape, or over the size bound. */
export class AiGatewayBadResponse extends AiGatewayError {
  readonly status = 502;
  readonly code = "ai_gateway_bad_response";
  constructor(detail: string) {
    super(`The AI gateway's answer is unusable: ${detail}`);
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const isTimeout = (err: unknown) => err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError");

async function readBounded(res: Response, maxBytes: number): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw new AiGatewayBadResponse(`larger than ${maxBytes} bytes`);
  }
  const reader = res.body?.getReader();
  if (!reader) return "";
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new AiGatewayBadResponse(`larger than ${maxBytes} bytes`);
    }
    text += decoder.decode(value, { stream: true });
  }
}

export interface HttpGatewayOptions {
  baseUrl: string;
  token?: string;
  chatModel?: string;
  embeddingModel?: string;
  fetchFn?: typeof fetch;
  /** Per attempt; defaults 30 s for chat, 15 s for embeddings. */
  timeoutMs?: number;
}

/**
 * An OpenAI-compatible endpoint: `POST {baseUrl}/chat/completions` and `POST {baseUrl}/embeddings`. One retry on a
 * 5xx or a failed connection; none after a timeout (the deadline is the caller's whole budget) nor on a 4xx.
 */
export function openAiCompatibleGateway(opts: HttpGatewayOptions): AiGateway {
  const base = opts.baseUrl.replace(/\/+$/, "");
  const fetchFn = opts.fetchFn ?? fetch;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;

  async function post(path: string, payload: unknown, timeoutMs: number, maxBytes: number): Promise<unknown> {
    const body = JSON.stringify(payload);
    for (let attempt = 1; ; attempt++) {
      let status: number;
      let text: string;
      try {
        ({ status, text } = await fetchWithDeadline(fetchFn, `${base}${path}`, { method: "POST", headers, body }, timeoutMs, async (res) =>
          // A failed answer's body may echo the prompt: it is never read, only cancelled.
          res.ok
            ? { status: res.status, text: await readBounded(res, maxBytes) }
            : (await res.body?.cancel(), { status: res.status, text: "" }),
        ));
      } catch (err) {
        if (err instanceof AiGatewayError) throw err;
        const timedOut = isTimeout(err);
        if (!timedOut && attempt === 1) {
          await pause(RETRY_DELAY_MS);
          continue;
        }
        throw new AiGatewayUnreachable(timedOut ? `no answer within ${timeoutMs} ms` : "connection failed");
      }
      if (status >= 500 && attempt === 1) {
        await pause(RETRY_DELAY_MS);
        continue;
      }
      if (status < 200 || status > 299) throw new AiGatewayStatusError(status);
      try {
        return JSON.parse(text);
      } catch {
        throw new AiGatewayBadResponse("not JSON");
      }
    }
  }

  return {
    kind: "openai-compatible",
    async chatJson(messages, o = {}) {
      const answer = await post(
        "/chat/completions",
        {
          model: opts.chatModel ?? DEFAULT_CHAT_MODEL,
          messages,
          response_format: { type: "json_object" },
          ...(o.maxTokens !== undefined ? { max_tokens: o.maxTokens } : {}),
          ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
        },
        opts.timeoutMs ?? CHAT_TIMEOUT_MS,
        MAX_CHAT_RESPONSE_BYTES,
      );
      const message = (answer as { choices?: { message?: { content?: unknown } }[] } | null)?.choices?.[0]?.message;
      if (!message || typeof message !== "object") throw new AiGatewayBadResponse("no choices[0].message");
      // null content is a refusal or an empty answer: no JSON from the model, which the caller reports as such.
      if (message.content === null || message.content === undefined) return "";
      if (typeof message.content !== "string") throw new AiGatewayBadResponse("message.content is not text");
      return message.content;
    },
    async embed(texts) {
      const vectors: number[][] = [];
      for (let i = 0; i < texts.length; i += EMBED_BATCH) {
        const batch = texts.slice(i, i + EMBED_BATCH);
        const answer = await post(
          "/embeddings",
          { model: opts.embeddingModel ?? DEFAULT_EMBEDDING_MODEL, input: batch, encoding_format: "float" },
          opts.timeoutMs ?? EMBED_TIMEOUT_MS,
          MAX_EMBED_RESPONSE_BYTES,
        );
        const data = (answer as { data?: unknown } | null)?.data;
        if (!Array.isArray(data)) throw new AiGatewayBadResponse("no data array");
        // Each item names its input by index; the order of the list itself is not relied on.
        const byIndex = new Array<number[] | undefined>(batch.length);
        for (const item of data as { index?: unknown; embedding?: unknown }[]) {
          const index = item?.index;
          if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= batch.length || byIndex[index])
            throw new AiGatewayBadResponse("embedding indexes do not match the inputs");
          byIndex[index] = checkVector(item.embedding);
        }
        vectors.push(...completeBatch(byIndex));
      }
      return sameDimension(vectors);
    },
  };
}

/** Embedding dimensions at most: real models use 384 to 3,072; anything far beyond is a broken answer. */
export const MAX_EMBEDDING_DIMENSIONS = 8192;

function checkVector(v: unknown): number[] {
  if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === "number" && Number.isFinite(x)))
    throw new AiGatewayBadResponse("an embedding is not a list of numbers");
  if (v.length > MAX_EMBEDDING_DIMENSIONS)
    throw new AiGatewayBadResponse(`an embedding has more than ${MAX_EMBEDDING_DIMENSIONS} dimensions`);
  return v as number[];
}

function completeBatch(vectors: (number[] | undefined)[]): number[][] {
  if (vectors.some((v) => v === undefined)) throw new AiGatewayBadResponse("fewer embeddings than inputs");
  return vectors as number[][];
}

function sameDimension(vectors: number[][]): number[][] {
  if (vectors.some((v) => v.length !== vectors[0]!.length)) throw new AiGatewayBadResponse("embeddings of different dimensions");
  return vectors;
}

/** The part of the `Ai` binding used here; its typed overloads key on literal model names, ours come from config. */
type AiRun = { run(model: string, inputs: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<unknown> };

/**
 * The Workers AI binding. Same retry rule as the HTTP client: one more attempt after a failure that was not the
 * deadline. The binding's errors are reported by kind only (their text may quote the input).
 */
export function workersAiGateway(ai: Ai, models: { chatModel?: string; embeddingModel?: string } = {}, timeoutMs?: number): AiGateway {
  const binding = ai as unknown as AiRun;
  async function run(model: string, inputs: Record<string, unknown>, deadline: number): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${deadline} ms`, "TimeoutError")), deadline);
      try {
        return await binding.run(model, inputs, { signal: controller.signal });
      } catch (err) {
        const timedOut = controller.signal.aborted || isTimeout(err);
        if (!timedOut && attempt === 1) continue;
        throw new AiGatewayUnreachable(timedOut ? `no answer within ${deadline} ms` : "Workers AI failed");
      } finally {
        clearTimeout(timer);
      }
    }
  }
  return {
    kind: "workers-ai",
    async chatJson(messages, o = {}) {
      const out = await run(
        models.chatModel ?? DEFAULT_CHAT_MODEL,
        {
          messages,
          response_format: o.schema ? { type: "json_schema", json_schema: o.schema } : { type: "json_object" },
          ...(o.maxTokens !== undefined ? { max_tokens: o.maxTokens } : {}),
          ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
        },
        timeoutMs ?? CHAT_TIMEOUT_MS,
      );
      // In JSON mode Workers AI may hand back the parsed object rather than its text.
      const response = (out as { response?: unknown } | null)?.response;
      if (response === null || response === undefined) return "";
      return typeof response === "string" ? response : JSON.stringify(response);
    },
    async embed(texts) {
      const vectors: number[][] = [];
      for (let i = 0; i < texts.length; i += EMBED_BATCH) {
        const batch = texts.slice(i, i + EMBED_BATCH);
        const out = await run(models.embeddingModel ?? DEFAULT_EMBEDDING_MODEL, { text: batch }, timeoutMs ?? EMBED_TIMEOUT_MS);
        const data = (out as { data?: unknown } | null)?.data;
        if (!Array.isArray(data) || data.length !== batch.length) throw new AiGatewayBadResponse("fewer embeddings than inputs");
        vectors.push(...data.map(checkVector));
      }
      return sameDimension(vectors);
    },
  };
}

/**
 * The deployment's gateway: the OpenAI-compatible endpoint when AI_GATEWAY_URL is set, else Workers AI when the `AI`
 * binding exists, else null (the routes then answer as the spec says: draft 422 `error`, search `hits: []`).
 * Models: AI_CHAT_MODEL and AI_EMBEDDING_MODEL, sent as they are to either implementation.
 */
export function configuredGateway(env: Env, fetchFn: typeof fetch = fetch): AiGateway | null {
  const config = readConfig(env);
  const models = {
    chatModel: config.AI_CHAT_MODEL ?? DEFAULT_CHAT_MODEL,
    embeddingModel: config.AI_EMBEDDING_MODEL ?? DEFAULT_EMBEDDING_MODEL,
  };
  if (config.AI_GATEWAY_URL)
    return openAiCompatibleGateway({ baseUrl: config.AI_GATEWAY_URL, token: config.AI_GATEWAY_TOKEN, fetchFn, ...models });
  if (env.AI) return workersAiGateway(env.AI, models);
  return null;
}
