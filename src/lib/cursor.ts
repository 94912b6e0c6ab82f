import { Validation } from "./errors";

/**
 * Opaque keyset cursors: base64url of the sort signature, the last row's sort values and its id. A cursor made for
 * another sort is refused rather than silently misread.
 */
export interface CursorState {
  sort: string;
  values: (string | number)[];
  id: string;
}

export function encodeCursor(state: CursorState): string {
  const bytes = new TextEncoder().encode(JSON.stringify([state.sort, state.values, state.id]));
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** `expectedValues` is the number of sort fields: a cursor carrying another number, or non-scalar values, is refused. */
export function decodeCursor(cursor: string, expectedSort: string, expectedValues: number): CursorState {
  const invalid = (message: string) => new Validation([{ field: "cursor", path: ["cursor"], code: "invalid_cursor", message }]);
  let parsed: unknown;
  try {
    const bin = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    parsed = JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (ch) => ch.charCodeAt(0))));
  } catch {
    throw invalid("Cursor is not one this API issued");
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 3 ||
    typeof parsed[0] !== "string" ||
    !Array.isArray(parsed[1]) ||
    typeof parsed[2] !== "string"
  ) {
    throw invalid("Cursor is not one this API issued");
  }
  if (parsed[0] !== expectedSort) throw invalid("Cursor was issued for another sort order; start again without a cursor");
  const values = parsed[1] as unknown[];
  if (values.length !== expectedValues || !values.every((v) => typeof v === "string" || typeof v === "number")) {
    throw invalid("Cursor is not one this API issued");
  }
  return { sort: parsed[0], values: values as (string | number)[], id: parsed[2] };
}
