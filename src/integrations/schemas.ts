import { z } from "@hono/zod-openapi";
import { ApiKeyIntegration } from "../api-keys/schemas";
import { Pagination } from "../crm/body";

/** An OAuth client that users of the organization granted access (a live refresh token family). */
export const OAuthClientIntegration = z
  .object({
    type: z.literal("oauth_client"),
    id: z
      .string()
      .openapi({ description: "The client's client_id (for a client identified by its metadata document, that document's URL)" }),
    name: z.string().nullable().openapi({
      description: "The name the client registered with (null for a configured client, a metadata document client, or one that gave none)",
    }),
    grantedBy: z.array(z.string()).openapi({ description: "The users whose grant keeps it connected" }),
    permissions: z.array(z.string()).openapi({ description: "What those grants allow, together" }),
    connectedAt: z.string().openapi({ description: "When the first of those grants was made" }),
  })
  .openapi("OAuthClientIntegration");
export type OAuthClientIntegration = z.infer<typeof OAuthClientIntegration>;

export const Integration = z.discriminatedUnion("type", [OAuthClientIntegration, ApiKeyIntegration]).openapi("Integration");
export type Integration = z.infer<typeof Integration>;

export const IntegrationList = z.object({ success: z.literal(true), data: z.array(Integration), pagination: Pagination });
