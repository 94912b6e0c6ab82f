import { inject } from "vitest";

/** The Node receiver started by receiver-server.ts, seen from inside workerd. */
export const receiverUrl = () => inject("receiverUrl");

export interface ReceivedRequest {
  method: string;
  headers: Record<string, string>;
  body: string;
  receivedAt: number;
}

export interface Mailbox {
  id: string;
  url: string;
  received(): Promise<ReceivedRequest[]>;
  count(): Promise<number>;
}

/** A fresh endpoint that answers `script` in order, then `fallback` (200 unless given). */
export async function openMailbox(
  opts: { script?: number[]; fallback?: number; location?: string; record?: boolean } = {},
): Promise<Mailbox> {
  const res = await fetch(`${receiverUrl()}/mailboxes`, { method: "POST", body: JSON.stringify(opts) });
  const { id, url } = (await res.json()) as { id: string; url: string };
  const read = async () =>
    (await (await fetch(`${receiverUrl()}/mailboxes/${id}`)).json()) as { count: number; requests: ReceivedRequest[] };
  return { id, url, received: async () => (await read()).requests, count: async () => (await read()).count };
}

/** Sets what the receiver's DNS-over-HTTPS endpoint answers for `name/type` keys, e.g. `"a.test/A"`. */
export async function setDnsAnswers(
  answers: Record<string, { Status: number; Answer?: { name: string; type: number; TTL: number; data: string }[] }>,
) {
  await fetch(`${receiverUrl()}/dns`, { method: "POST", body: JSON.stringify(answers) });
}

export interface ResoFeed {
  /** The base URL of the service (what MLS_API_URL holds). */
  url: string;
  /** The request URLs the feed received, with their headers. */
  requests(): Promise<{ url: string; headers: Record<string, string> }[]>;
}

/** A fake RESO Web API (OData) serving `listings` as its Property resource to clients sending `Bearer token`. */
export async function openResoFeed(listings: Record<string, unknown>[], opts: { token?: string; status?: number } = {}): Promise<ResoFeed> {
  const res = await fetch(`${receiverUrl()}/reso`, {
    method: "POST",
    body: JSON.stringify({ token: opts.token ?? "reso-test-token", listings, status: opts.status }),
  });
  const { id, url } = (await res.json()) as { id: string; url: string };
  return {
    url,
    requests: async () =>
      (
        (await (await fetch(`${receiverUrl()}/reso/${id}/requests`)).json()) as {
          requests: { url: string; headers: Record<string, string> }[];
        }
      ).requests,
  };
}

export interface ClientDocumentOptions {
  /** The document; an object is sent as JSON. Every "{self}" in it becomes the document's own URL. */
  body: unknown;
  status?: number;
  headers?: Record<string, string>;
  /** Sent without Content-Length, in 1 KB chunks. */
  chunked?: boolean;
}

export interface ClientDocument {
  /** The document's URL on the receiver: a client_id. */
  url: string;
  /** How often the document was read. */
  hits(): Promise<number>;
  /** Serves another document (or status, headers) at the same URL from now on. */
  update(opts: ClientDocumentOptions): Promise<void>;
}

/** An OAuth client's metadata document served by the receiver (http on 127.0.0.1, as development and tests accept). */
export async function openClientDocument(opts: ClientDocumentOptions): Promise<ClientDocument> {
  const res = await fetch(`${receiverUrl()}/client-documents`, { method: "POST", body: JSON.stringify(opts) });
  const { id, url } = (await res.json()) as { id: string; url: string };
  return {
    url,
    hits: async () => ((await (await fetch(`${receiverUrl()}/client-documents/${id}/hits`)).json()) as { hits: number }).hits,
    update: async (next) => {
      await (await fetch(`${receiverUrl()}/client-documents/${id}`, { method: "POST", body: JSON.stringify(next) })).body?.cancel();
    },
  };
}
