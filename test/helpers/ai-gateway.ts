import { receiverUrl } from "./receiver";

/** One answer of the fake gateway: a raw HTTP answer, or a chat completion whose message is `content`. */
export type FakeAiAnswer =
  | { status: number; body?: unknown; delayMs?: number }
  | { content: string; delayMs?: number }
  | { delayMs: number };

export interface AiGatewayRequest {
  /** `chat/completions` or `embeddings`. */
  path: string;
  headers: Record<string, string>;
  /** The JSON body as parsed (the raw text when it was not JSON). */
  body: any;
}

export interface FakeAiGateway {
  /** The base URL, what AI_GATEWAY_URL holds. */
  url: string;
  token: string;
  /** AI_GATEWAY_URL and AI_GATEWAY_TOKEN pointing at this gateway, for `call(..., {vars})` or `testApp({}, vars)`. */
  vars: { AI_GATEWAY_URL: string; AI_GATEWAY_TOKEN: string };
  /** Every request it received, in order. */
  requests(): Promise<AiGatewayRequest[]>;
}

/**
 * A fake OpenAI-compatible AI gateway on the test receiver (helpers/receiver-server.ts): `POST {url}/chat/completions`
 * and `POST {url}/embeddings`, bearer `token` required. Each request takes the next `script` answer; after that chat
 * answers `chat` (default "{}") and embeddings a deterministic hashed bag-of-words vector of `dimensions` (default
 * 256), L2-normalized, so texts sharing words are close. `reverseEmbeddings` lists the embeddings last index first
 * (clients must order by `index`).
 */
export async function openAiGateway(
  opts: { token?: string; script?: FakeAiAnswer[]; chat?: string; dimensions?: number; reverseEmbeddings?: boolean } = {},
): Promise<FakeAiGateway> {
  const token = opts.token ?? "ai-test-token";
  const res = await fetch(`${receiverUrl()}/ai`, { method: "POST", body: JSON.stringify({ ...opts, token }) });
  const { id, url } = (await res.json()) as { id: string; url: string };
  return {
    url,
    token,
    vars: { AI_GATEWAY_URL: url, AI_GATEWAY_TOKEN: token },
    requests: async () => ((await (await fetch(`${receiverUrl()}/ai/${id}/requests`)).json()) as { requests: AiGatewayRequest[] }).requests,
  };
}

/** A chat completion answering `value` as JSON text. */
export const chatJsonAnswer = (value: unknown): FakeAiAnswer => ({ content: JSON.stringify(value) });

/** Cosine similarity of two vectors. */
export function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}
