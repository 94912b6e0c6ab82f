import { and, count, desc, eq, sql } from "drizzle-orm";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import type { Db } from "../db/client";
import { documentOverages, documents, documentUsage } from "../db/schema";
import { expectRow, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { linkedDeal } from "./deal-link";

/** A new document of another domain (a template's use) checks its deal as a generation does. */
export { linkedDeal };
import { readConfig } from "../env";
import { newEvent } from "../events/outbox";
import { resourceEvent } from "../events/resource-event";
import { canonicalJson } from "../lib/canonical-json";
import { sha256Hex } from "../lib/crypto";
import { type FieldIssue, NotFound, TemporarilyUnavailable, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { FORMS, type SigningParty } from "./forms";
import { AMENDMENT_FORM, type AmendmentCanonical } from "./forms/amendment";
import { dollars, longDate } from "./forms/parts";
import { PURCHASE_FORM, type PurchaseCanonical, purchaseRuleIssues } from "./forms/purchase";
import { deriveObligations, obligationInserts, signedAmendmentChanges } from "./obligations";
import type { Document, DocumentCreate } from "./schemas";

/** What the signatures use of a document: its forms (the parties who sign) and its text and PDF as rendered. */
export { FORMS, type SigningParty } from "./forms";
import { renderDocumentPdf } from "./render";

export { renderDocumentPdf, renderDocumentText } from "./render";
/** A person's erasure (erasure/erase.ts) reaches the documents that name them through this; the right of access reads them. */
export { documentsErasable, documentsNaming } from "./erasure";
/** An obligation as the list shows it, with its urgency in UTC days: the daily brief (brief/service.ts) shows the same. */
export { DUE_SOON_DAYS, toObligation, utcDay } from "./obligations";

type Row = typeof documents.$inferSelect;

export const toDocument = (r: Row): Document => ({
  id: r.id,
  status: r.status,
  formKey: r.formKey,
  canonical: r.canonical,
  sha256: r.sha256,
  dealId: r.dealId,
  source: r.source,
  title: r.title ?? FORMS[r.formKey]?.title ?? r.formKey,
  ...(r.source === "upload"
    ? {
        pageCount: r.pageCount ?? 0,
        pages: (r.pages ?? []).map(({ width, height, rotation }) => ({ width, height, rotation })),
        formFields: r.formFields ?? [],
        restrictionsRemoved: r.restrictionsRemoved,
        textStatus: r.textStatus ?? "pending",
        fields: r.fields,
        tagsStatus: r.tagsStatus,
        ...(r.templateId ? { templateId: r.templateId, templateVersion: r.templateVersion ?? 1 } : {}),
      }
    : {}),
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

/** What a typed form's document holds of the columns an upload fills. */
const FORM_SOURCE = {
  source: "form",
  title: null,
  fileKey: null,
  pageCount: null,
  pages: null,
  formFields: null,
  restrictionsRemoved: false,
  textStatus: null,
  fields: null,
  tagsStatus: null,
  templateId: null,
  templateVersion: null,
} as const satisfies Partial<Row>;

/** The metering period of an instant: its calendar month in UTC. */
export const periodOf = (at: Date) => at.toISOString().slice(0, 7);
const periodLabel = (at: Date) => new Intl.DateTimeFormat("en-US", { month: "long", year: "numeric", timeZone: "UTC" }).format(at);

export async function findDocument(ctx: ServiceContext, id: string): Promise<Row> {
  const row = await ctx.db
    .select()
    .from(documents)
    .where(and(eq(documents.organizationId, ctx.organizationId), eq(documents.id, id)))
    .get();
  if (!row) throw new NotFound("Document");
  return row;
}

/** The checks' guards, or one 400 with the issues of every check that failed. */
async function everyIssue<T extends unknown[]>(checks: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(checks);
  const failed = settled.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
  const other = failed.find((e) => !(e instanceof Validation));
  if (other) throw other;
  if (failed.length) throw new Validation(failed.flatMap((e) => (e as Validation).issues));
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as T;
}

const amendsIssue = (message: string) =>
  new Validation([{ field: "amendment.amends", path: ["canonical", "amendment", "amends"], code: "invalid_reference", message }]);

/**
 * An amendment names a purchase agreement of the caller's organization whose envelope has completed (an
 * offer not yet accepted is edited, not amended), and waives only conditions that agreement has: otherwise a 400
 * naming the field. The agreement must still be there, signed, when the batch runs.
 */
async function amendedAgreement(ctx: ServiceContext, canonical: Record<string, unknown>): Promise<Statement[]> {
  if (canonical.formKey !== AMENDMENT_FORM) return [];
  const { amends, waives } = (canonical as AmendmentCanonical).amendment;
  const agreement = await findDocument(ctx, amends).catch((err: unknown) => {
    if (err instanceof NotFound) throw amendsIssue("No agreement of purchase and sale with this id in your organization");
    throw err;
  });
  if (agreement.formKey !== PURCHASE_FORM)
    throw amendsIssue(`Only an agreement of purchase and sale can be amended; this document is ${agreement.formKey}`);
  if (agreement.status !== "SIGNED")
    throw amendsIssue(
      "The agreement has not been signed by every party yet: an offer not yet accepted is edited and sent again, not amended",
    );
  const conditions = (agreement.canonical as PurchaseCanonical).purchase.conditions.length;
  const beyond = waives.map((n, i) => ({ n, i })).filter(({ n }) => n >= conditions);
  if (beyond.length > 0)
    throw new Validation(
      beyond.map(({ n, i }) => ({
        field: `amendment.waives.${i}`,
        path: ["canonical", "amendment", "waives", i],
        code: "invalid_reference",
        message: `The agreement has ${conditions} condition(s); there is no condition ${n}`,
      })),
    );
  await amendedTermsHold(ctx, agreement, (canonical as AmendmentCanonical).amendment);
  return [
    expectRow(
      ctx.db,
      documents,
      and(eq(documents.organizationId, ctx.organizationId), eq(documents.id, amends), eq(documents.status, "SIGNED")),
    ),
  ];
}

/**
 * The agreement as amended (its signed amendments, then this one) keeps the rules it was signed under: a new price
 * at least the deposit, a new completion date no earlier than the deposit, the irrevocable date and each condition
 * still to waive. Only the fields this amendment changes are named, each problem once.
 */
async function amendedTermsHold(ctx: ServiceContext, agreement: Row, a: AmendmentCanonical["amendment"]): Promise<void> {
  if (!a.price && !a.completion) return;
  const signed = (agreement.canonical as PurchaseCanonical).purchase;
  const { changes } = await signedAmendmentChanges(ctx.db, ctx.organizationId, agreement.id);
  const amended = {
    ...signed,
    price: a.price ?? { cents: changes.priceCents ?? signed.price.cents },
    completion: a.completion ?? { date: changes.completion ?? signed.completion.date },
  };
  const waived = new Set([...changes.waived, ...a.waives]);
  const issues = purchaseRuleIssues(amended, waived).flatMap(({ path }): FieldIssue[] => {
    const [field, index] = path;
    if (field === "deposit" && path[1] === "cents")
      return a.price
        ? [
            {
              field: "amendment.price.cents",
              path: ["canonical", "amendment", "price", "cents"],
              code: "invalid_range",
              message: `The new price cannot be below the agreement's deposit of ${dollars(signed.deposit.cents)}`,
            },
          ]
        : [];
    if (!a.completion) return [];
    const before = (what: string) => ({
      field: "amendment.completion.date",
      path: ["canonical", "amendment", "completion", "date"],
      code: "invalid_range",
      message: `The new completion date cannot come before ${what}`,
    });
    if (field === "deposit") return [before(`the deposit falls due (${longDate(signed.deposit.dueDate)})`)];
    if (field === "completion") return [before(`the offer's irrevocable date (${longDate(signed.irrevocableUntil)})`)];
    const condition = signed.conditions[index as number]!;
    return [
      before(
        `the waiver deadline of condition ${(index as number) + 1} (${condition.type}, ${longDate(condition.waiverDeadline)}) unless this amendment waives it`,
      ),
    ];
  });
  if (issues.length > 0) throw new Validation(issues);
}

/**
 * Who signs a document (spec: Rule 1 of Endpoints): the parties its form derives, for an amendment those of the
 * agreement it amends; null when the form is not a typed standard form.
 */
export async function signingParties(ctx: ServiceContext, doc: Row): Promise<SigningParty[] | null> {
  const form = FORMS[doc.formKey];
  if (form?.parties) return form.parties(doc.canonical);
  if (!form?.amendsPurchase) return null;
  const amended = await amendedDocument(ctx.db, ctx.organizationId, doc);
  return (amended && FORMS[amended.formKey]?.parties?.(amended.canonical)) || [];
}

type Amendable = Pick<Row, "id" | "formKey" | "canonical">;

/** The agreement an amendment amends (of the same organization), null for another form or when it is gone. */
async function amendedDocument(db: Db, organizationId: string, doc: Amendable): Promise<Row | null> {
  if (!FORMS[doc.formKey]?.amendsPurchase) return null;
  const id = (doc.canonical as AmendmentCanonical).amendment.amends;
  return (
    (await db
      .select()
      .from(documents)
      .where(and(eq(documents.organizationId, organizationId), eq(documents.id, id)))
      .get()) ?? null
  );
}

/**
 * A document as documents/render.ts renders it: an amendment's wording names the agreement it amends (its property,
 * parties and conditions), so it comes with that agreement's canonical.
 */
export const renderable = async <T extends Amendable>(
  db: Db,
  organizationId: string,
  doc: T,
): Promise<T & { amended: Record<string, unknown> | null }> => ({
  ...doc,
  amended: (await amendedDocument(db, organizationId, doc))?.canonical ?? null,
});

/**
 * POST /api/documents (DESIGN.md contract 4): the reviewed canonical draft becomes a GENERATED document, with the
 * obligations its form implies (documents/obligations.ts). The month's counter moves in the same batch, and a
 * document past the allotment gets its overage row there too, from the counter as that batch leaves it: concurrent
 * generations each take their own position, none is counted twice.
 */
export async function createDocument(ctx: ServiceContext, input: DocumentCreate): Promise<Document> {
  const canonical = input.canonical as Record<string, unknown>;
  const sha256 = await sha256Hex(canonicalJson(canonical));
  return withRetries(async () => {
    const [dealGuard, amendsGuard] = await everyIssue<[Statement[], Statement[]]>([
      linkedDeal(ctx, input.dealId),
      amendedAgreement(ctx, canonical),
    ]);
    const now = new Date();
    const at = nowIso(now);
    const period = periodOf(now);
    const row: Row = {
      id: newId(),
      organizationId: ctx.organizationId,
      formKey: input.formKey,
      status: "GENERATED",
      canonical,
      sha256,
      dealId: input.dealId ?? null,
      ...FORM_SOURCE,
      createdBy: ctx.actor.userId ?? null,
      createdAt: at,
      updatedAt: at,
      version: 1,
    };
    const included = readConfig(ctx.env).DOCUMENTS_INCLUDED_PER_MONTH;
    const org = ctx.organizationId;
    await commit(
      ctx,
      [
        ...dealGuard,
        ...amendsGuard,
        ctx.db.insert(documents).values(row),
        ...obligationInserts(ctx.db, await deriveObligations(row, at)),
        ctx.db
          .insert(documentUsage)
          .values({ organizationId: org, period, used: 1 })
          .onConflictDoUpdate({
            target: [documentUsage.organizationId, documentUsage.period],
            set: { used: sql`${documentUsage.used} + 1` },
          }),
        ...(included === undefined
          ? []
          : [
              ctx.db
                .insert(documentOverages)
                .select(
                  sql`SELECT ${row.id}, ${org}, ${period}, u.used, ${included}, ${at} FROM ${documentUsage} u WHERE u.organization_id = ${org} AND u.period = ${period} AND u.used > ${included}`,
                ),
            ]),
      ],
      [
        newEvent(ctx, "DOCUMENT_GENERATED", { documentId: row.id, formKey: row.formKey, sha256: row.sha256 }),
        resourceEvent(ctx, "document.created", toDocument(row)),
      ],
    );
    return toDocument(row);
  });
}

export { listForms } from "./form-catalog";

export async function getDocument(ctx: ServiceContext, id: string): Promise<Document> {
  return toDocument(await findDocument(ctx, id));
}

/** A document's PDF as its form renders it (what a signer of a new envelope on it would read). */
export async function documentPdf(ctx: ServiceContext, id: string): Promise<Uint8Array> {
  const doc = await findDocument(ctx, id);
  if (doc.fileKey) return storedPdf(ctx, doc.fileKey);
  return renderDocumentPdf(ctx.env, await renderable(ctx.db, ctx.organizationId, doc));
}

/** An uploaded document's stored PDF. */
export async function storedPdf(ctx: Pick<ServiceContext, "files">, key: string): Promise<Uint8Array> {
  const object = await ctx.files.get(key);
  if (!object) throw new TemporarilyUnavailable();
  return new Uint8Array(await object.arrayBuffer());
}

/** GET /api/documents: newest first, keyset-paginated. */
export async function listDocuments(ctx: ServiceContext, q: { limit: number; cursor?: string }) {
  const after = decodeNewestFirstCursor(q.cursor);
  const mine = eq(documents.organizationId, ctx.organizationId);
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(documents)
      .where(after ? and(mine, olderThan(documents.createdAt, documents.id, after)) : mine)
      .orderBy(desc(documents.createdAt), desc(documents.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(documents).where(mine),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { documents: page.map(toDocument), pagination };
}

/** GET /api/documents/usage (spec: Usage). */
export async function getUsage(ctx: ServiceContext) {
  const now = new Date();
  const row = await ctx.db
    .select({ used: documentUsage.used })
    .from(documentUsage)
    .where(and(eq(documentUsage.organizationId, ctx.organizationId), eq(documentUsage.period, periodOf(now))))
    .get();
  return { used: row?.used ?? 0, included: readConfig(ctx.env).DOCUMENTS_INCLUDED_PER_MONTH ?? null, periodLabel: periodLabel(now) };
}
