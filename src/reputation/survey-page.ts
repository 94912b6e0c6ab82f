import type { Context } from "hono";

/** The survey page (`{APP_URL}/survey/<token>`); being written. */
export function surveyPage(c: Context): Response {
  return c.html("<!doctype html><title>Survey</title>") as unknown as Response;
}
