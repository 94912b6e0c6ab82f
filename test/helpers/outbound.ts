import { onTestFinished, vi } from "vitest";

/**
 * A connection that fails the way workerd's fetch does when it is refused or dropped. Tests use it instead of a real
 * closed port: workerd logs every failed connection as an "uncaught exception", even when the code catches the
 * rejection, and that noise would hide a real one in the test output.
 */
export const droppedFetch: typeof fetch = async () => {
  throw new Error("Network connection lost.");
};

/**
 * Until the test ends, every fetch to `origin` fails as `droppedFetch` does, for code that takes its URL from the env
 * and calls the global fetch (the mailer, the AI gateway, the MLS client); other fetches go out as usual. Returns the
 * URLs that were refused, so a test can tell the call was made.
 */
export function refuseConnections(origin: string): string[] {
  const realFetch = globalThis.fetch;
  const refused: string[] = [];
  const spy = vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (new URL(url).origin !== new URL(origin).origin) return realFetch.call(globalThis, input, init);
    refused.push(url);
    return droppedFetch(input, init);
  });
  onTestFinished(() => spy.mockRestore());
  return refused;
}
