import { expect } from "vitest";
import { call, json } from "./client";
import type { TestPrincipal } from "./factories";

/** POST /v1/imports with a CSV body, as `curl --data-binary @people.csv -H 'Content-Type: text/csv'` sends it. */
export function uploadCsv(token: string, csv: string | Uint8Array, query = "kind=contacts", headers: Record<string, string> = {}) {
  const bytes = typeof csv === "string" ? new TextEncoder().encode(csv) : csv;
  return call("POST", `/v1/imports?${query}`, {
    token,
    rawBody: new TextDecoder().decode(bytes),
    headers: { "content-type": "text/csv", "content-length": String(bytes.length), ...headers },
  });
}

/** Starts an import and answers it (202 expected). */
export async function startCsvImport(owner: TestPrincipal, csv: string, query = "kind=contacts"): Promise<Record<string, any>> {
  const res = await uploadCsv(owner.token, csv, query);
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(202);
  return body.data;
}

export async function startRowsImport(owner: TestPrincipal, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await call("POST", "/v1/imports", { token: owner.token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(202);
  return payload.data;
}

/** Polls GET /v1/imports/{id} until the import has ended (the queue consumer runs it in the background). */
export async function settledImport(owner: TestPrincipal, id: string, timeoutMs = 25_000): Promise<Record<string, any>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await call("GET", `/v1/imports/${id}`, { token: owner.token });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(200);
    if (!["queued", "running"].includes(body.data.status)) return body.data;
    if (Date.now() > until) throw new Error(`import ${id} still ${body.data.status} after ${timeoutMs} ms: ${JSON.stringify(body.data)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The errors CSV of an import, as rows of [row, column, reason] (header left out). */
export async function importErrors(owner: TestPrincipal, id: string): Promise<string[][]> {
  const res = await call("GET", `/v1/imports/${id}/errors`, { token: owner.token });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/csv");
  const text = await res.text();
  const lines = text.trim().split("\r\n");
  expect(lines[0]).toBe("row,column,reason");
  return lines.slice(1).map((l) => {
    const m = /^(\d+),("(?:[^"]|"")*"|[^,]*),(.*)$/.exec(l)!;
    const unquote = (s: string) => (s.startsWith('"') ? s.slice(1, -1).replaceAll('""', '"') : s);
    return [m[1]!, unquote(m[2]!), unquote(m[3]!)];
  });
}
