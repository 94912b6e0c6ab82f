import { OpenAPIHono, z } from "@hono/zod-openapi";
import { NoQuery } from "../crm/list-query";
import { API, apiError, apiJson } from "../platform/api-family";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { requestMeta } from "../platform/request-meta";
import { defineRoute } from "../platform/route";
import {
  AuditTrail,
  CertificateLink,
  Envelope,
  EnvelopeIdParam,
  SignatureSettings,
  SignatureSettingsUpdate,
  SignerIdParams,
  SigningLink,
  SigningSessionLink,
  ViewRequest,
  VoidQuery,
} from "./schemas";
import { requestSigningView, startHostSession } from "./sessions";
import { certificateLink, getAuditTrail, getEnvelope, resendSigner, signedDocumentLink, voidEnvelope } from "./service";
import { readSettings, updateSettings } from "./settings";

const tags = ["Signatures"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: apiError("No envelope with this id in your organization") };

const read = defineRoute(API, {
  operationId: "getEnvelope",
  method: "get",
  path: "/api/signatures/{envelopeId}",
  tags,
  security,
  summary: "Read an envelope",
  request: { params: EnvelopeIdParam },
  responses: { 200: apiJson("The envelope with its signers", Envelope), ...NOT_FOUND },
});

const remove = defineRoute(API, {
  operationId: "voidEnvelope",
  method: "delete",
  path: "/api/signatures/{envelopeId}",
  tags,
  security,
  summary: "Void an envelope",
  description: "Every signing link dies at once and the document can be sent again. The reason is recorded in the audit trail.",
  request: { params: EnvelopeIdParam, query: VoidQuery },
  responses: {
    200: apiJson("Voided", z.object({ voided: z.literal(true) })),
    ...NOT_FOUND,
    409: apiError("cannot_void: the envelope is already completed, declined, voided or expired"),
  },
});

const audit = defineRoute(API, {
  operationId: "getEnvelopeAudit",
  method: "get",
  path: "/api/signatures/{envelopeId}/audit",
  tags,
  security,
  summary: "The envelope's audit trail and whether its hash chain verifies",
  description:
    "Every event (sent, code_sent, opened, authenticated, consented, signed, declined, voided, expired, reminded, expiry_notice, verification_locked, resent; approved, rejected, viewed; view_requested, host_session_started, session_opened) with time, IP and user agent. A signature made through an embedded view or a host session says so in its data (`via`, and who asked for the view or hosted it). Each entry's hash covers the previous one's, so any change to the trail shows as a broken chain.",
  request: { params: EnvelopeIdParam, query: NoQuery },
  responses: { 200: apiJson("The audit trail", AuditTrail), ...NOT_FOUND },
});

const certificate = defineRoute(API, {
  operationId: "getEnvelopeCertificate",
  method: "get",
  path: "/api/signatures/{envelopeId}/certificate",
  tags,
  security,
  summary: "A download link for the certificate of completion",
  description:
    "The PDF names the document's SHA-256, every signer with their steps (times, IPs) and the audit chain's head. The link is signed and expires after 15 minutes.",
  request: { params: EnvelopeIdParam },
  responses: {
    200: apiJson("A signed, expiring link", CertificateLink),
    ...NOT_FOUND,
    409: apiError("certificate_unavailable (the envelope is not completed) or certificate_pending (being generated)"),
    503: apiError("FILES_URL_SECRET is not configured"),
  },
});

const signedDocument = defineRoute(API, {
  operationId: "getSignedDocument",
  method: "get",
  path: "/api/signatures/{envelopeId}/document",
  tags,
  security,
  summary: "A download link for the sealed, signed PDF",
  description:
    "One PDF: the document as the signers read it, a signature page per signer (name, role, typed signature, time, IP, verification method) and the certificate of completion, sealed with a PAdES signature (the platform's seal certificate) that Adobe Reader, pdfsig or pyHanko verify, and POST /api/public/verify too. The link is signed and expires after 15 minutes.",
  request: { params: EnvelopeIdParam },
  responses: {
    200: apiJson("A signed, expiring link", CertificateLink),
    ...NOT_FOUND,
    409: apiError("document_unavailable (the envelope is not completed) or document_pending (being sealed)"),
    503: apiError("FILES_URL_SECRET is not configured"),
  },
});

const resend = defineRoute(API, {
  operationId: "resendSigner",
  method: "post",
  path: "/api/signatures/{envelopeId}/signers/{signerId}/resend",
  tags,
  security,
  summary: "Send a signer a new link",
  description:
    "Mints and mails the signer a new signing link; the signer's earlier links stop working at once (404 gone). For a signer who lost the mail, and the only way to lift a lock of their code verification (15 wrong codes: send_code and authenticate answer 429 verification_locked until then); the lock's failure count starts again, and a signer who had verified verifies again on the new link (the url in this answer passes for nobody). Both are recorded in the audit trail (`resent`, `verification_locked`). The link's `url` is in this answer once: an Idempotency-Key replay leaves it out. Refused with 409 cannot_resend when the signer has signed or declined, the envelope is no longer open (completed, declined, voided, expired), in sequential mode the signer's turn has not come (their link is sent when the signer before them has signed), or the recipient signs embedded or in person (never mailed: ask for a view URL or a host session).",
  request: { params: SignerIdParams },
  responses: {
    200: apiJson("The new link, mailed to the signer", SigningLink),
    404: apiError("No envelope with this id in your organization, or no signer with this id in it"),
    409: apiError(
      "cannot_resend: the signer has signed or declined, the envelope is no longer open, or (sequential) the signer's turn has not come",
    ),
  },
});

const SESSION_REFUSALS =
  "envelope_not_open: the envelope is completed, declined, voided or expired; not_your_turn: the recipient's order has not come; recipient_done: the recipient has signed, approved, viewed or declined";

const view = defineRoute(API, {
  operationId: "createSigningView",
  method: "post",
  path: "/api/signatures/{envelopeId}/signers/{signerId}/view",
  tags,
  security,
  summary: "A single-use signing URL for an embedded recipient",
  description:
    "For a recipient sent with `embedded: true`, whose turn it is: a URL valid 5 minutes that opens once (a second open, or one after 5 minutes, answers 410). Its page may be framed only by `frameAncestors` (its Content-Security-Policy frame-ancestors names exactly those), posts `{type: ready|signed|declined|error}` to the first of them only (never `*`, never a token), and when the signer is done goes to `returnUrl` with `?event=signing_complete`, `declined` or `cancel`. The audit trail records who asked (`view_requested`) and the signature as made embedded. The URL is in this answer once: an Idempotency-Key replay leaves it out.",
  request: { params: SignerIdParams, body: { required: true, content: { "application/json": { schema: ViewRequest } } } },
  responses: {
    201: apiJson("The single-use URL", SigningSessionLink),
    404: apiError("No envelope with this id in your organization, or no signer with this id in it"),
    409: apiError(`not_embedded: the recipient was not sent as embedded; ${SESSION_REFUSALS}`),
    422: apiError(
      "invalid_view_request: returnUrl or an origin is not https (http://127.0.0.1:<port> and http://localhost:<port> only in development), or an origin has a path; issues[] names each",
    ),
    503: apiError("temporarily_unavailable: the session could not be recorded just now; try again after Retry-After"),
  },
});

const hostSession = defineRoute(API, {
  operationId: "createHostSession",
  method: "post",
  path: "/api/signatures/{envelopeId}/signers/{signerId}/host-session",
  tags,
  security,
  summary: "A single-use in-person signing session on the host's device",
  description:
    "For a recipient sent with `inPerson: {hostUserId}`, asked by that host: a URL valid 15 minutes that opens once (410 afterwards). Its page first asks the host to hand the device to the signer, then the signer confirms who they are (a code mailed to the signer, when the envelope asks for it), consents and signs. The audit trail (`host_session_started`, the signature's `via: in_person` and `host`) and the certificate name the host and the signer. The URL is in this answer once: an Idempotency-Key replay leaves it out.",
  request: { params: SignerIdParams },
  responses: {
    201: apiJson("The single-use URL", SigningSessionLink),
    403: apiError("not_the_host: only the user named in the recipient's inPerson.hostUserId may start their session"),
    404: apiError("No envelope with this id in your organization, or no signer with this id in it"),
    409: apiError(`not_in_person: the recipient was not sent to sign in person; ${SESSION_REFUSALS}`),
    503: apiError("temporarily_unavailable: the session could not be recorded just now; try again after Retry-After"),
  },
});

const settings = defineRoute(API, {
  operationId: "getSignatureSettings",
  method: "get",
  path: "/api/signatures/settings",
  tags,
  security,
  summary: "The organization's defaults for new envelopes",
  description:
    "signerVerification (`attested` until set) and reminders (none until set), used when POST /api/documents/{id}/signature does not say.",
  responses: { 200: apiJson("The settings", SignatureSettings) },
});

const updateSettingsRoute = defineRoute(API, {
  operationId: "updateSignatureSettings",
  method: "put",
  path: "/api/signatures/settings",
  tags,
  security,
  summary: "Change the organization's defaults for new envelopes",
  description:
    "Fields left out keep their value; `reminders: null` turns reminders off. Envelopes already sent keep what they were sent with. They are the organization's defaults (how every signer proves who they are): `organization:manage`, owners and admins only.",
  request: { body: { required: true, content: { "application/json": { schema: SignatureSettingsUpdate } } } },
  responses: { 200: apiJson("The settings now", SignatureSettings) },
});

export const signatureRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  // Before /api/signatures/{envelopeId}, which would take "settings" for an id.
  .openapi(settings, async (c) => c.json(await readSettings(serviceContext(c)), 200))
  .openapi(updateSettingsRoute, async (c) => c.json(await updateSettings(serviceContext(c), c.req.valid("json")), 200))
  .openapi(read, async (c) => c.json(await getEnvelope(serviceContext(c), c.req.valid("param").envelopeId), 200))
  .openapi(remove, async (c) =>
    c.json(await voidEnvelope(serviceContext(c), c.req.valid("param").envelopeId, c.req.valid("query").reason, requestMeta(c)), 200),
  )
  .openapi(resend, async (c) => {
    c.set("replayOmits", [["url"]]); // a raw signing token: an Idempotency-Key replay leaves it out
    const { envelopeId, signerId } = c.req.valid("param");
    return c.json(await resendSigner(serviceContext(c), envelopeId, signerId, requestMeta(c)), 200);
  })
  .openapi(view, async (c) => {
    c.set("replayOmits", [["url"]]); // a single-use capability: an Idempotency-Key replay leaves it out
    const { envelopeId, signerId } = c.req.valid("param");
    return c.json(await requestSigningView(serviceContext(c), envelopeId, signerId, c.req.valid("json"), requestMeta(c)), 201);
  })
  .openapi(hostSession, async (c) => {
    c.set("replayOmits", [["url"]]);
    const { envelopeId, signerId } = c.req.valid("param");
    return c.json(await startHostSession(serviceContext(c), envelopeId, signerId, requestMeta(c)), 201);
  })
  .openapi(audit, async (c) => c.json(await getAuditTrail(serviceContext(c), c.req.valid("param").envelopeId), 200))
  .openapi(certificate, async (c) => c.json(await certificateLink(serviceContext(c), c.req.valid("param").envelopeId), 200))
  .openapi(signedDocument, async (c) => c.json(await signedDocumentLink(serviceContext(c), c.req.valid("param").envelopeId), 200));
