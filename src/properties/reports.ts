import { pdfLib } from "../files/pdf-lib";
import { readConfig } from "../env";
import { pdfWriter } from "../files/pdf-writer";
import { requestFileSigner } from "../files/signed-url";
import { NotConfigured, Unprocessable } from "../lib/errors";
import type { ServiceContext } from "../service-context";
import { reportsPrefix } from "../files/keys";
import { listingOf, orderedPhotos, type PropertyRecord, toProperty } from "./mapping";
import type { Property, Report, ReportRequest, Valuation } from "./schemas";
import { findProperty } from "./service";
import { computeValuation } from "./valuation";

/** Report links stay valid a day: long enough to pass on to a client, short enough not to live forever. */
export const REPORT_URL_TTL_SECONDS = 24 * 60 * 60;
const TITLES = { MARKET_ANALYSIS: "Market analysis", LISTING_SHEET: "Listing sheet" } as const;

const money = (v: unknown) => (typeof v === "number" ? `$${v.toLocaleString("en-US", { maximumFractionDigits: 2 })}` : "n/a");
const pct = (v: number | null) => (v === null ? "n/a (too few recent sales)" : `${(v * 100).toFixed(1)}% a year`);
const addressLine = (a: Record<string, unknown>) =>
  [a.street, a.unit, a.city, [a.state, a.zipCode].filter(Boolean).join(" ")].filter(Boolean).join(", ");
const list = (v: unknown) => (Array.isArray(v) && v.length ? v.join(", ") : null);

/** The first uploaded JPEG or PNG photo, for the listing sheet's header; null without one. */
async function coverPhoto(ctx: ServiceContext, record: PropertyRecord): Promise<{ bytes: ArrayBuffer; type: string } | null> {
  const photo = orderedPhotos(record.photos).find((p) => p.key && (p.contentType === "image/jpeg" || p.contentType === "image/png"));
  const object = photo ? await ctx.files.get(photo.key!) : null;
  return object ? { bytes: await object.arrayBuffer(), type: photo!.contentType! } : null;
}

export async function renderReport(input: {
  property: Property;
  request: ReportRequest;
  generatedAt: string;
  valuation: Valuation | { unavailable: string } | null;
  cover: { bytes: ArrayBuffer; type: string } | null;
}): Promise<Uint8Array> {
  const { property: p, request } = input;
  const { PDFDocument } = await pdfLib();
  const pdf = await PDFDocument.create();
  const title = `${TITLES[request.reportType]}: ${addressLine(p.address)}`;
  pdf.setTitle(title);
  pdf.setProducer("Brokerage Edge API");
  const { line, space } = await pdfWriter(pdf);
  line(TITLES[request.reportType], { size: 20, strong: true });
  line(addressLine(p.address), { size: 13, strong: true });
  line(`Generated ${input.generatedAt}${p.mlsId ? `, MLS ${p.mlsId}` : ""}`, { size: 9 });
  line("");
  if (input.cover) {
    // An upload is judged an image by its first bytes; one that cannot be decoded leaves the sheet without a cover.
    const image = await (input.cover.type === "image/png" ? pdf.embedPng(input.cover.bytes) : pdf.embedJpg(input.cover.bytes)).catch(
      () => null,
    );
    if (image) {
      const scaled = image.scaleToFit(495, 260);
      const at = space(scaled.height + 8);
      at.page.drawImage(image, { x: 50, y: at.y, width: scaled.width, height: scaled.height });
    } else line("(The cover photo could not be read as an image.)", { size: 9 });
  }
  const d = p.details as Record<string, unknown>;
  const l = p.listing as Record<string, unknown>;
  line("The property", { size: 13, strong: true });
  line(`${String(d.propertyType).replaceAll("_", " ")}${d.propertySubType ? ` (${d.propertySubType})` : ""}`);
  line(
    `${d.bedrooms ?? "?"} bedrooms, ${d.bathrooms ?? "?"} bathrooms${d.halfBaths ? `, ${d.halfBaths} half baths` : ""}; ${d.squareFootage ? `${d.squareFootage} sq ft` : "living area n/a"}${d.lotSize ? `; lot ${d.lotSize} sq ft` : ""}`,
  );
  line(
    `Built ${d.yearBuilt ?? "n/a"}; ${[d.garage && "garage", d.pool && "pool", d.waterfront && "waterfront"].filter(Boolean).join(", ") || "no garage, pool or waterfront"}`,
  );
  line("");
  line("The listing", { size: 13, strong: true });
  line(
    `Status ${l.status}; list price ${money(l.listPrice)} (originally ${money(l.originalPrice)}); listed ${l.listDate}, ${l.daysOnMarket} days on market`,
  );
  if (l.status === "SOLD") line(`Sold ${l.soldDate ?? ""} for ${money(l.soldPrice)}`);
  for (const h of (l.priceHistory as { price: number; date: string; event: string }[]) ?? [])
    line(`${h.date.slice(0, 10)}  ${h.event.replaceAll("_", " ")}  ${money(h.price)}`, { indent: 14, size: 9 });
  const agent = l.listingAgent as Record<string, unknown> | undefined;
  if (agent) line(`Listing agent: ${[agent.name, agent.email, agent.phone].filter(Boolean).join(", ")}`);
  if (request.reportType === "LISTING_SHEET") {
    const f = (p.features ?? {}) as Record<string, unknown>;
    const m = (p.marketing ?? {}) as Record<string, unknown>;
    line("");
    if (m.description) {
      line("Description", { size: 13, strong: true });
      for (const para of String(m.description).split(/\n+/)) line(para);
      line("");
    }
    const features = [
      ["Interior", list(f.interior)],
      ["Exterior", list(f.exterior)],
      ["Appliances", list(f.appliances)],
    ].filter(([, v]) => v);
    if (features.length) {
      line("Features", { size: 13, strong: true });
      for (const [k, v] of features) line(`${k}: ${v}`);
      line("");
    }
    const hoa = p.hoa as Record<string, unknown> | null;
    const taxes = p.taxes as Record<string, unknown> | null;
    if (hoa?.monthlyFee !== undefined)
      line(`HOA: ${money(hoa.monthlyFee)} a month${list(hoa.includes) ? ` (includes ${list(hoa.includes)})` : ""}`);
    if (taxes?.annualAmount !== undefined) line(`Taxes: ${money(taxes.annualAmount)}${taxes.taxYear ? ` (${taxes.taxYear})` : ""}`);
    for (const o of (m.openHouses as { date: string; endTime: string; type?: string }[] | undefined) ?? [])
      line(`Open house ${o.date} to ${o.endTime}${o.type ? ` (${o.type})` : ""}`);
  }
  const v = input.valuation;
  if (v) {
    line("");
    line("Estimated value", { size: 13, strong: true });
    if ("unavailable" in v) line(v.unavailable);
    else {
      line(
        `${money(v.estimatedValue)} (range ${money(v.priceRange.low)} to ${money(v.priceRange.high)}), confidence ${v.confidence}/100, ${money(v.pricePerSquareFoot)} per sq ft`,
      );
      if (request.includeComparables) {
        line("");
        line("Comparable sales", { size: 13, strong: true });
        for (const c of v.comparables)
          line(
            `${c.address}: sold ${c.soldDate} for ${money(c.soldPrice)}${c.squareFootage ? `, ${c.squareFootage} sq ft` : ""}, similarity ${c.similarity}`,
            { size: 9 },
          );
      }
      if (request.includeMarketTrends) {
        line("");
        line("Market trends", { size: 13, strong: true });
        line(`Appreciation: ${pct(v.marketTrends.appreciation)}`);
        line(`Average days on market of sales: ${v.marketTrends.averageDaysOnMarket ?? "n/a"}`);
        line(`Median price per sq ft (last 12 months): ${money(v.marketTrends.pricePerSquareFoot)}`);
      }
    }
  }
  return pdf.save();
}

/**
 * POST /v1/properties/{id}/reports: a PDF stored in R2 and handed out by a signed link. A market analysis always
 * carries the estimate from comparable sales (or says why there is none); a listing sheet carries it when comparables
 * or market trends are asked for.
 */
export async function createReport(ctx: ServiceContext, id: string, request: ReportRequest): Promise<Report> {
  if (!readConfig(ctx.env).FILES_URL_SECRET) throw new NotConfigured("FILES_URL_SECRET");
  const record = await findProperty(ctx, id);
  const generatedAt = new Date().toISOString();
  const wantsValuation = request.reportType === "MARKET_ANALYSIS" || request.includeComparables || request.includeMarketTrends;
  let valuation: Valuation | { unavailable: string } | null = null;
  if (wantsValuation) {
    try {
      valuation = await computeValuation(ctx, record);
    } catch (err) {
      if (!(err instanceof Unprocessable)) throw err;
      valuation = { unavailable: err.message };
    }
  }
  const pdf = await renderReport({
    property: toProperty(record),
    request,
    generatedAt,
    valuation,
    cover: request.reportType === "LISTING_SHEET" ? await coverPhoto(ctx, record) : null,
  });
  const reportId = crypto.randomUUID();
  const key = `${reportsPrefix(ctx.organizationId, id)}${reportId}.pdf`;
  await ctx.files.put(key, pdf, {
    httpMetadata: {
      contentType: "application/pdf",
      contentDisposition: `inline; filename="${request.reportType.toLowerCase()}-${reportId}.pdf"`,
    },
    customMetadata: { reportType: request.reportType, generatedAt, status: listingOf(record).status },
  });
  const link = await requestFileSigner(ctx, REPORT_URL_TTL_SECONDS)(key);
  return { reportId, reportType: request.reportType, format: "PDF", url: link.url, generatedAt, expiresAt: link.expiresAt };
}
