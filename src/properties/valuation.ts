import { and, desc, eq } from "drizzle-orm";
import { propertyValuations } from "../db/schema";
import { withRetries } from "../db/write";
import { NotFound, Unprocessable } from "../lib/errors";
import { newId } from "../lib/ids";
import type { ServiceContext } from "../service-context";
import { boxSql, distanceMiles, radiusBox } from "./geo";
import { daysBetween, type PropertyRecord, today } from "./mapping";
import type { Valuation } from "./schemas";
import { commitProperty, findProperty, readPropertyForWrite } from "./service";
import { changeEvents, replaceProperty } from "./writes";

/**
 * Automated valuation from the organization's own sales (the method /docs describes, VALUATION_METHOD):
 *
 * 1. Candidates: SOLD listings of the same property type sold in the last 24 months, within 10 miles (or, without
 *    coordinates, in the same ZIP code or city), with a size within 50% of the subject's (living area; lot size for
 *    LAND).
 * 2. Each gets a similarity in [0, 1]: 30% location (distance), 30% size, 15% condition (year built), 10% amenities
 *    (pool, garage, waterfront alike), 15% market (how recent the sale). The ten most similar at 0.5 or more count.
 * 3. Their prices per square foot are brought to today with the area's appreciation and averaged, weighted by
 *    similarity squared; times the subject's size that is the estimate. The range is one weighted standard deviation
 *    (at least 3%) either side; confidence (0 to 100) falls with fewer comparables, a wider spread and a lower
 *    similarity.
 * 4. Fewer than three comparables: no figure at all (422 insufficient_comparables), never a guess.
 */
export const VALUATION_METHOD = `Comparable SOLD listings of your organization: same property type, sold in the last 24 months, within 10 miles
(same ZIP code or city when coordinates are missing), size within 50%. Similarity = 30% location + 30% size + 15% condition
(year built) + 15% market (recency) + 10% amenities (pool, garage, waterfront). The ten most similar (similarity ≥ 0.5) are
weighted by similarity squared; their price per square foot, adjusted to today by the area's appreciation, times the
subject's size is the estimate; the range is ± one weighted standard deviation (at least 3%). Confidence (0-100) grows with
the number of comparables and their similarity and falls with their spread. With fewer than 3 comparables the answer is
422 insufficient_comparables: no figure is made up.`;

const SEARCH_MILES = 10;
const LOOKBACK_MONTHS = 24;
const MIN_COMPARABLES = 3;
const MAX_COMPARABLES = 10;
const MIN_SIMILARITY = 0.5;
const MONTH_DAYS = 30.44;

interface Sale {
  id: string;
  address: Record<string, unknown>;
  latitude: number | null;
  longitude: number | null;
  zipCode: string;
  city: string;
  size: number;
  yearBuilt: number | null;
  flags: [boolean, boolean, boolean];
  soldPrice: number;
  soldDate: string;
  listDate: string;
}

const sizeOf = (p: { propertyType: string; squareFootage: number | null; details: Record<string, unknown> }): number | null =>
  p.squareFootage ??
  (p.propertyType === "LAND" && typeof p.details.lotSize === "number" && p.details.lotSize > 0 ? p.details.lotSize : null);

const oneLine = (a: Record<string, unknown>) =>
  [a.street, a.unit, a.city, [a.state, a.zipCode].filter(Boolean).join(" ")].filter(Boolean).join(", ");
const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? null : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function salesNear(ctx: ServiceContext, subject: PropertyRecord, now: Date): Promise<Sale[]> {
  const since = today(new Date(now.getTime() - LOOKBACK_MONTHS * MONTH_DAYS * 86_400_000));
  const where = ["p.organization_id = ?", "p.status = 'SOLD'", "p.property_type = ?", "p.sold_date >= ?", "p.sold_price > 0", "p.id <> ?"];
  const params: unknown[] = [ctx.organizationId, subject.propertyType, since, subject.id];
  if (subject.latitude !== null && subject.longitude !== null) {
    const box = boxSql("p", radiusBox({ latitude: subject.latitude, longitude: subject.longitude }, SEARCH_MILES));
    where.push(`((${box.sql}) OR (p.latitude IS NULL AND p.zip_code = ?))`);
    params.push(...box.params, subject.zipCode);
  } else {
    where.push("(p.zip_code = ? OR p.city = ? COLLATE NOCASE)");
    params.push(subject.zipCode, subject.city);
  }
  const { results } = await ctx.d1
    .prepare(
      `SELECT p.id, p.address, p.details, p.property_type, p.latitude, p.longitude, p.zip_code, p.city, p.square_footage, p.year_built, p.pool, p.garage, p.waterfront,
              p.sold_price, p.sold_date, p.list_date
       FROM properties p WHERE ${where.join(" AND ")} ORDER BY p.sold_date DESC LIMIT 500`,
    )
    .bind(...params)
    .all<Record<string, unknown>>();
  return results.flatMap((r) => {
    const details = JSON.parse(r.details as string) as Record<string, unknown>;
    const size = sizeOf({ propertyType: r.property_type as string, squareFootage: r.square_footage as number | null, details });
    if (size === null) return [];
    return [
      {
        id: r.id as string,
        address: JSON.parse(r.address as string),
        latitude: r.latitude as number | null,
        longitude: r.longitude as number | null,
        zipCode: r.zip_code as string,
        city: r.city as string,
        size,
        yearBuilt: r.year_built as number | null,
        flags: [r.pool === 1, r.garage === 1, r.waterfront === 1],
        soldPrice: r.sold_price as number,
        soldDate: r.sold_date as string,
        listDate: r.list_date as string,
      },
    ];
  });
}

/** Annual change of the median price per square foot between the last six months and the six before; null with under two sales in either. */
function appreciationOf(sales: Sale[], now: string): number | null {
  const recent = sales.filter((s) => daysBetween(s.soldDate, now) < 6 * MONTH_DAYS).map((s) => s.soldPrice / s.size);
  const older = sales
    .filter((s) => daysBetween(s.soldDate, now) >= 6 * MONTH_DAYS && daysBetween(s.soldDate, now) < 12 * MONTH_DAYS)
    .map((s) => s.soldPrice / s.size);
  if (recent.length < 2 || older.length < 2) return null;
  return round((median(recent)! / median(older)!) ** 2 - 1, 4);
}

/** Computes a valuation of `subject`, or refuses (422) when there is too little to go on. */
export async function computeValuation(ctx: ServiceContext, subject: PropertyRecord, now = new Date()): Promise<Valuation> {
  const size = sizeOf(subject);
  if (size === null)
    throw new Unprocessable("insufficient_data", "The property needs details.squareFootage (or details.lotSize for LAND) to be valued");
  const on = today(now);
  const sales = await salesNear(ctx, subject, now);
  const appreciation = appreciationOf(sales, on);
  const subjectFlags = [subject.pool, subject.garage, subject.waterfront];
  const scored = sales.flatMap((s) => {
    const sizeScore = 1 - Math.abs(s.size - size) / size;
    if (sizeScore < 0.5) return [];
    let location: number;
    if (subject.latitude !== null && subject.longitude !== null && s.latitude !== null && s.longitude !== null) {
      const miles = distanceMiles(
        { latitude: subject.latitude, longitude: subject.longitude },
        { latitude: s.latitude, longitude: s.longitude },
      );
      if (miles > SEARCH_MILES) return [];
      location = 1 - miles / SEARCH_MILES;
    } else location = s.zipCode === subject.zipCode ? 0.8 : 0.6;
    const condition =
      subject.yearBuilt !== null && s.yearBuilt !== null ? Math.max(0, 1 - Math.abs(subject.yearBuilt - s.yearBuilt) / 50) : 0.7;
    const amenities = s.flags.filter((f, i) => f === subjectFlags[i]).length / 3;
    const monthsAgo = daysBetween(s.soldDate, on) / MONTH_DAYS;
    const market = Math.max(0, 1 - monthsAgo / LOOKBACK_MONTHS);
    const similarity = 0.3 * location + 0.3 * sizeScore + 0.15 * condition + 0.1 * amenities + 0.15 * market;
    const adjustedPpsf = (s.soldPrice / s.size) * (1 + (appreciation ?? 0)) ** (monthsAgo / 12);
    return [{ sale: s, similarity, adjustedPpsf, parts: { location, size: sizeScore, condition, amenities, market } }];
  });
  const comps = scored
    .filter((c) => c.similarity >= MIN_SIMILARITY)
    .sort((a, b) => b.similarity - a.similarity || a.sale.id.localeCompare(b.sale.id))
    .slice(0, MAX_COMPARABLES);
  if (comps.length < MIN_COMPARABLES) {
    throw new Unprocessable(
      "insufficient_comparables",
      `Only ${comps.length} comparable sale${comps.length === 1 ? "" : "s"} found (SOLD, same property type, last ${LOOKBACK_MONTHS} months, within ${SEARCH_MILES} miles, similar size); at least ${MIN_COMPARABLES} are needed for a valuation`,
    );
  }
  const weights = comps.map((c) => c.similarity ** 2);
  const wsum = weights.reduce((a, b) => a + b, 0);
  const wmean = (f: (c: (typeof comps)[number]) => number) => comps.reduce((acc, c, i) => acc + weights[i]! * f(c), 0) / wsum;
  const ppsf = wmean((c) => c.adjustedPpsf);
  const sd = Math.sqrt(wmean((c) => (c.adjustedPpsf - ppsf) ** 2));
  const cv = sd / ppsf;
  const spread = Math.max(cv, 0.03);
  const estimate = Math.round((ppsf * size) / 100) * 100;
  const meanSimilarity = comps.reduce((a, c) => a + c.similarity, 0) / comps.length;
  const confidence = Math.round(100 * Math.min(1, 0.55 + 0.075 * comps.length) * Math.max(0, Math.min(1, 1 - 2 * cv)) * meanSimilarity);
  const lastYear = sales.filter((s) => daysBetween(s.soldDate, on) < 12 * MONTH_DAYS);
  const trendSales = lastYear.length ? lastYear : sales;
  const dom = sales.map((s) => daysBetween(s.listDate, s.soldDate));
  return {
    estimatedValue: estimate,
    confidence,
    valuationDate: now.toISOString(),
    pricePerSquareFoot: round(ppsf),
    priceRange: { low: Math.round((estimate * (1 - spread)) / 100) * 100, high: Math.round((estimate * (1 + spread)) / 100) * 100 },
    factors: {
      location: round(wmean((c) => c.parts.location)),
      size: round(wmean((c) => c.parts.size)),
      condition: round(wmean((c) => c.parts.condition)),
      amenities: round(wmean((c) => c.parts.amenities)),
      market: round(wmean((c) => c.parts.market)),
    },
    comparables: comps.map((c) => ({
      id: c.sale.id,
      address: oneLine(c.sale.address),
      soldPrice: c.sale.soldPrice,
      soldDate: c.sale.soldDate,
      squareFootage: subject.propertyType === "LAND" && subject.squareFootage === null ? null : c.sale.size,
      similarity: round(c.similarity, 3),
    })),
    marketTrends: {
      appreciation,
      averageDaysOnMarket: dom.length ? Math.round(dom.reduce((a, b) => a + b, 0) / dom.length) : null,
      pricePerSquareFoot: round(median(trendSales.map((s) => s.soldPrice / s.size))!),
    },
  };
}

/** POST /v1/properties/{id}/valuation: a fresh valuation, kept, and summarised in the property's valuation group. */
export async function requestValuation(ctx: ServiceContext, id: string): Promise<Valuation> {
  return withRetries(async () => {
    const before = await readPropertyForWrite(ctx, id);
    const valuation = await computeValuation(ctx, before);
    const summary = {
      estimatedValue: valuation.estimatedValue,
      confidence: valuation.confidence,
      valuationDate: valuation.valuationDate,
      pricePerSquareFoot: valuation.pricePerSquareFoot,
      comparables: valuation.comparables.map(({ address, soldPrice, soldDate, squareFootage }) => ({
        address,
        soldPrice,
        soldDate,
        squareFootage,
      })),
    };
    const after = { ...before, valuation: summary, updatedAt: valuation.valuationDate, version: before.version + 1 };
    await commitProperty(
      ctx,
      [
        ...replaceProperty(ctx, before, after),
        ctx.db
          .insert(propertyValuations)
          .values({ id: newId(), organizationId: ctx.organizationId, propertyId: id, createdAt: valuation.valuationDate, body: valuation }),
      ],
      changeEvents(ctx, before, after),
    );
    return valuation;
  });
}

/** GET /v1/properties/{id}/valuation: the latest; 404 valuation_not_found before the first. */
export async function latestValuation(ctx: ServiceContext, id: string): Promise<Valuation> {
  await findProperty(ctx, id);
  const row = await ctx.db
    .select({ body: propertyValuations.body })
    .from(propertyValuations)
    .where(and(eq(propertyValuations.organizationId, ctx.organizationId), eq(propertyValuations.propertyId, id)))
    .orderBy(desc(propertyValuations.createdAt), desc(propertyValuations.id))
    .get();
  if (!row) throw new NotFound("Valuation", "This property has no valuation yet: POST to this path computes one");
  return row.body as unknown as Valuation;
}
