import { env } from "cloudflare:workers";
import { PDFDict, PDFDocument, PDFName, PDFRawStream } from "@pdfme/pdf-lib";
import { describe, expect, it } from "vitest";
import { FORMS, LeaseCanonical } from "../../src/documents/forms";
import { renderDocumentPdf, renderDocumentText } from "../../src/documents/render";
import type { AuditRow } from "../../src/signatures/audit";
import { renderCertificate, renderSignedPacket, type SignedPacketInput } from "../../src/signatures/certificate";

const LANDLORD = "山田 太郎";
const TENANTS = ["Дмитрий Иванов", "Łukasz Żółć", "Γιώργος Παπαδόπουλος"];
const NAMES = [LANDLORD, ...TENANTS];

const lease = (over: Partial<LeaseCanonical["lease"]> = {}): LeaseCanonical =>
  LeaseCanonical.parse({
    schemaVersion: 1,
    formKey: "on/standard-lease",
    lease: {
      landlords: [{ name: LANDLORD, email: "yamada@example.jp" }],
      tenants: TENANTS.map((name, i) => ({ name, email: `tenant${i}@example.test` })),
      property: { address: { street: "12 Queen Street West, Unit 804", city: "Toronto", province: "Ontario" } },
      term: { commencement: { year: 2027, month: 2, day: 1 }, end: { year: 2028, month: 1, day: 31 } },
      monthlyRent: { cents: 250_000 },
      deposit: { cents: 250_000, dueDate: { year: 2027, month: 1, day: 15 } },
      ...over,
    },
    provenance: { aiDrafted: false },
  });

const leaseDoc = { id: "doc_lease_1", formKey: "on/standard-lease", sha256: "a".repeat(64), canonical: lease() };
const freeForm = (title: string, body: string) => ({
  id: "doc_free_1",
  formKey: "generic/free-form",
  canonical: { schemaVersion: 1, formKey: "generic/free-form", title, body, provenance: { aiDrafted: false } },
});

const norm = (s: string) => s.replace(/\s+/g, " ").trim();

async function pdfText(bytes: Uint8Array): Promise<string> {
  const { extractText, getDocumentProxy } = await import("unpdf");
  const { text } = await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: true });
  return norm(text as string);
}

/** Every text item with its right edge, to check that wrapping keeps text inside the margins. */
async function rightEdges(bytes: Uint8Array): Promise<number[]> {
  const { getDocumentProxy } = await import("unpdf");
  const pdf = await getDocumentProxy(new Uint8Array(bytes));
  const edges: number[] = [];
  for (let n = 1; n <= pdf.numPages; n++) {
    for (const item of (await (await pdf.getPage(n)).getTextContent()).items)
      if ("transform" in item) edges.push(item.transform[4] + item.width);
  }
  return edges;
}

/** The embedded font programs: base font name and stored size of the font file. */
async function embeddedFonts(bytes: Uint8Array): Promise<{ name: string; size: number }[]> {
  const pdf = await PDFDocument.load(bytes);
  const fonts: { name: string; size: number }[] = [];
  for (const [, obj] of pdf.context.enumerateIndirectObjects()) {
    if (!(obj instanceof PDFDict) || obj.get(PDFName.of("Type")) !== PDFName.of("FontDescriptor")) continue;
    const file = pdf.context.lookup(obj.get(PDFName.of("FontFile2")));
    fonts.push({ name: String(obj.get(PDFName.of("FontName"))), size: file instanceof PDFRawStream ? file.contents.length : -1 });
  }
  return fonts;
}

const signers: SignedPacketInput["signers"] = [
  {
    id: "sig_1",
    name: LANDLORD,
    email: "yamada@example.jp",
    role: "landlord",
    signedAt: "2027-01-10T09:00:00.000Z",
    verification: "email_code",
  },
  ...TENANTS.map((name, i) => ({
    id: `sig_${i + 2}`,
    name,
    email: `tenant${i}@example.test`,
    role: "tenant",
    signedAt: `2027-01-1${i + 1}T10:00:00.000Z`,
    verification: i === 0 ? ("client_attested" as const) : null,
  })),
];
const audit = signers.flatMap((s, i) =>
  (["opened", "signed"] as const).map((event, j) => ({
    envelopeId: "env_1",
    seq: 2 * i + j + 1,
    event,
    signerId: s.id,
    at: s.signedAt!,
    ip: `203.0.113.${i + 1}`,
    userAgent: `Agent/${i + 1}.0 (Test)`,
    data: null,
    prevHash: "0".repeat(64),
    hash: "b".repeat(64),
  })),
) as unknown as AuditRow[];
const packetInput = (documentPdf?: Uint8Array): SignedPacketInput => ({
  envelope: { id: "env_1", mode: "parallel", completedAt: "2027-01-13T10:00:00.000Z", documentSha256: "c".repeat(64) },
  document: leaseDoc,
  documentPdf,
  signers,
  audit,
  chain: { valid: true, head: "d".repeat(64), length: audit.length },
});

describe("document text", () => {
  it("renders the lease's parties, unit, term, rent, deposit and what they imply", () => {
    const { title, sections } = renderDocumentText(leaseDoc);
    expect(title).toBe(FORMS["on/standard-lease"]!.title);
    expect(sections.map((s) => s.heading)).toEqual(["Parties", "Rental unit", "Term", "Rent", "Deposit", "Clauses"]);
    expect(sections[0]!.lines).toEqual([
      `Landlord: ${LANDLORD} (yamada@example.jp)`,
      ...TENANTS.map((n, i) => `Tenant: ${n} (tenant${i}@example.test)`),
    ]);
    expect(sections[2]!.lines).toEqual(["Commences: February 1, 2027", "Ends: January 31, 2028"]);
    expect(sections[3]!.lines).toEqual(["$2,500.00 a month, payable monthly"]);
    expect(sections[4]!.lines).toEqual(["Amount: $2,500.00", "Due: January 15, 2027"]);
    const clauses = sections[5]!.lines.join("\n");
    expect(clauses).toContain("$2,500.00 each month, in advance");
    expect(clauses).toContain("deposit of $2,500.00, due on January 15, 2027");
    expect(clauses).toContain("fixed term from February 1, 2027 to January 31, 2028");
    expect(sections[5]!.lines.at(-1)).toMatch(/Ontario Residential Tenancy Agreement \(Standard Form of Lease\)/);
  });

  it("says month to month without an end, and no deposit without one", () => {
    const { sections } = renderDocumentText({
      ...leaseDoc,
      canonical: lease({ term: { commencement: { year: 2027, month: 3, day: 1 } }, deposit: undefined }),
    });
    expect(sections.map((s) => s.heading)).not.toContain("Deposit");
    expect(sections.find((s) => s.heading === "Term")!.lines).toContain("Month to month, with no end date");
    expect(sections.find((s) => s.heading === "Clauses")!.lines.join(" ")).toMatch(/no deposit.*continues from month to month/);
  });

  it("renders every form, the free-form one as its title and body", async () => {
    expect(Object.keys(FORMS).sort()).toEqual([
      "generic/free-form",
      "on/agreement-of-purchase-and-sale",
      "on/amendment",
      "on/buyer-representation-agreement",
      "on/listing-agreement",
      "on/standard-lease",
    ]);
    const doc = freeForm("Letter to 山田", "Dear Taro,\n\nThe keys are ready.");
    expect(renderDocumentText(doc)).toEqual({
      title: "Letter to 山田",
      sections: [{ heading: "", lines: ["Dear Taro,", "", "The keys are ready."] }],
    });
    expect(await pdfText(await renderDocumentPdf(env, doc))).toContain("Letter to 山田 Dear Taro, The keys are ready.");
  });
});

describe("Unicode PDFs", () => {
  it("prints every name as written in the document PDF, with the lease's terms and a footer on each page", async () => {
    const bytes = await renderDocumentPdf(env, leaseDoc);
    const text = await pdfText(bytes);
    for (const name of NAMES) expect(text).toContain(norm(name));
    for (const term of [
      "12 Queen Street West, Unit 804, Toronto, Ontario",
      "$2,500.00",
      "February 1, 2027",
      "January 31, 2028",
      "January 15, 2027",
    ])
      expect(text).toContain(term);
    expect(text).toContain("Document doc_lease_1 · page 1 of 1");
    expect(text).not.toContain("?");
    const fonts = await embeddedFonts(bytes);
    // Subsets: the whole files are 760 KB (DejaVu Sans) and 6.2 MB (IPAGothic).
    expect(fonts.map((f) => f.name.replace(/^\/[A-Z]{6}\+/, "")).sort()).toEqual(["DejaVuSans", "DejaVuSans-Bold", "IPAGothic"]);
    for (const f of fonts) expect(f.size).toBeLessThan(40_000);
  });

  it("embeds only the fonts the text uses", async () => {
    const fonts = await embeddedFonts(await renderDocumentPdf(env, freeForm("Plain", "Nothing but Latin here.")));
    expect(fonts.map((f) => f.name.replace(/^\/[A-Z]{6}\+/, "")).sort()).toEqual(["DejaVuSans", "DejaVuSans-Bold"]);
  });

  it("round-trips a mixed-script line, wraps long text inside the margins, and prints a glyph no font has as its code point", async () => {
    const latin = "The quick brown fox jumps over the lazy dog and keeps running. ".repeat(12);
    const cjk = "東京都千代田区丸の内一丁目の賃貸物件について".repeat(8);
    const bytes = await renderDocumentPdf(env, freeForm("山田 Taro Łukasz", `山田 Taro Łukasz\n${latin}\n${cjk}\nEthiopic ሰ here`));
    const text = await pdfText(bytes);
    expect(text).toContain("山田 Taro Łukasz 山田 Taro Łukasz");
    expect(text).toContain(norm(latin));
    expect(text.replace(/\s/g, "")).toContain(cjk);
    expect(text).toContain("Ethiopic <U+1230> here");
    const edges = await rightEdges(bytes);
    expect(Math.max(...edges)).toBeLessThanOrEqual(595 - 50 + 0.5);
    expect(Math.max(...edges)).toBeGreaterThan(595 - 50 - 40);
  });

  it("prints Korean names, names in scripts no font has as exact code points, and Hebrew right to left", async () => {
    const bytes = await renderDocumentPdf(env, freeForm("Names", "김민준\nराहुल शर्मा\n🏠 Home\nשרה"));
    const text = await pdfText(bytes);
    expect(text).toContain("김민준");
    expect(text).toContain("<U+0930 U+093E U+0939 U+0941 U+0932> <U+0936 U+0930 U+094D U+092E U+093E>");
    expect(text).toContain("<U+1F3E0> Home");
    expect(text).not.toContain("?");
    // Drawn in visual order (shin rightmost), which pdf.js reads back in logical order.
    expect(text.replace(/\s/g, "")).toContain("שרה");
  });

  it("never starts a line with closing CJK punctuation", async () => {
    // Around 47 full-width characters fit a line: one of these paragraphs puts "、" just past the edge.
    const body = Array.from({ length: 16 }, (_, i) => `${"あ".repeat(40 + i)}、い`).join("\n");
    const { extractText, getDocumentProxy } = await import("unpdf");
    const { text } = await extractText(await getDocumentProxy(await renderDocumentPdf(env, freeForm("Kinsoku", body))), {
      mergePages: true,
    });
    const lines = (text as string).split("\n");
    expect(lines.filter((l) => l.startsWith("あ")).length).toBeGreaterThan(16);
    expect(lines.filter((l) => l.startsWith("、"))).toEqual([]);
  });

  it("names every signer as written in the certificate, with both hashes and how each was verified", async () => {
    const text = await pdfText(await renderCertificate(env, packetInput()));
    for (const name of NAMES) expect(text).toContain(norm(name));
    expect(text).toContain(`Document SHA-256: ${"a".repeat(64)}`);
    expect(text.replace(/\s/g, "")).toContain(`DocumentPDFSHA-256(asthesignerssawit):${"c".repeat(64)}`);
    expect(text).toContain("Verification: E-mail one-time code (verified by the server)");
    expect(text).toContain("Verification: Attested by the signer's client");
    expect(text).toContain("Verification: not recorded");
    expect(text).toContain("signed at 2027-01-10T09:00:00.000Z from 203.0.113.1 (Agent/1.0 (Test))");
    expect(text).toContain("hash chain verified");
  });

  it("builds the signed packet: the pages the signers saw, a signature page per signer, then the certificate", async () => {
    const documentPdf = await renderDocumentPdf(env, leaseDoc);
    const packet = await renderSignedPacket(env, packetInput(documentPdf));
    expect(packet.getPageCount()).toBe(1 + signers.length + 1);
    const bytes = await packet.save();
    expect(bytes.length).toBeLessThan(200_000);
    const { extractText, getDocumentProxy } = await import("unpdf");
    const { text: pages } = await extractText(await getDocumentProxy(new Uint8Array(bytes)));
    expect(norm(pages[0]!)).toBe(await pdfText(documentPdf));
    for (const [i, s] of signers.entries()) {
      const page = norm(pages[1 + i]!);
      expect(page).toContain(`/s/ ${norm(s.name)}`);
      expect(page).toContain(`Name: ${norm(s.name)} Role: ${s.role} E-mail: ${s.email}`);
      expect(page).toContain(`IP address: 203.0.113.${i + 1} User agent: Agent/${i + 1}.0 (Test)`);
      expect(page).toContain(`Signed at: ${s.signedAt}`);
    }
    expect(norm(pages[1]!)).toContain("Verification: E-mail one-time code (verified by the server)");
    expect(norm(pages[3]!)).toContain("Verification: not recorded");
    expect(norm(pages.at(-1)!)).toContain("Certificate of completion");
    expect(norm(pages.at(-1)!)).toContain("page 5 of 5");
  });

  it("renders the document itself when the signed PDF is not given", async () => {
    const packet = await renderSignedPacket(env, packetInput());
    const text = await pdfText(await packet.save());
    expect(text).toContain("Rental unit 12 Queen Street West");
    for (const name of NAMES) expect(text).toContain(`/s/ ${norm(name)}`);
  });
});
