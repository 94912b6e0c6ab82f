import { bodyLimit } from "hono/body-limit";
import { PayloadTooLarge } from "../lib/errors";

/** Default for every JSON route; upload routes and the small public forms set their own with `limitBody`. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * 413 before the body is parsed: Content-Length over the limit is refused at once, and a chunked body is cut off
 * as soon as its running count passes the limit.
 */
export const limitBody = (maxBytes: number) =>
  bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new PayloadTooLarge(maxBytes);
    },
  });
