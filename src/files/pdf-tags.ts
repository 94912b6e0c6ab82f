import type { PDFDict, PDFDocument, PDFPageLeaf } from "@pdfme/pdf-lib";
import type { RoleField } from "../db/documents";
import { type PageGeometry, percentBoxOf } from "./pdf-geometry";
import { pdfLib } from "./pdf-lib";
import { concat, type Font, type Glyph, type Matrix, type Operand, readFont, type Shown, startState, walkText } from "./pdf-text";

/**
 * Text tags (issue 45 part 2): `{{type;role=<key>;name=<name>;required=true|false;options=a|b}}` written in a PDF's
 * text become fields where their glyphs stand, and leave the content itself. Found in what the page's content streams
 * show (files/pdf-text.ts's walker: fonts and /ToUnicode as pdftotext reads them), in the order they show it, so a tag
 * split over several operators (kerning, a word processor's runs) is found whole. Removed by rewriting the very
 * operators that show it: their strings lose the tag's codes and a TJ adjustment of the same advance takes their place,
 * so the text around a tag stays where it was and no reader finds the tag again, painted over or not.
 *
 * Not searched: text inside form XObjects and annotation appearances (a tag there stays where it is, unfound).
 */

export const TAG_TYPES = ["signature", "initials", "name", "email", "date", "text", "number", "checkbox", "radio", "dropdown"] as const;
type TagType = (typeof TAG_TYPES)[number];

/** A send takes at most this many fields (signatures/schemas.ts MAX_FIELDS), so a document holds no more tags. */
export const MAX_TAGS = 500;
/** The limits of a field given at send (signatures/schemas.ts FieldInput): a tag's values keep them. */
const MAX_ROLE = 64;
const MAX_NAME = 100;
const MAX_OPTION = 200;
const MAX_OPTIONS = 50;
/** What a problem quotes of an unclosed tag. */
const QUOTE_CHARS = 80;

const CHOICES = new Set<TagType>(["radio", "dropdown"]);
const KEYS = new Set(["role", "name", "required", "options"]);

/** A tag found, its field (page from 1, box in percent of the page as displayed), and the glyphs that show it. */
export interface FoundTag {
  page: number;
  text: string;
  field: RoleField;
  glyphs: Glyph[];
}

/** A tag that cannot be read, with its page (from 1) and text. */
export interface TagProblem {
  page: number;
  text: string;
  code: string;
  message: string;
}

type Lib = Awaited<ReturnType<typeof pdfLib>>;

/** Tokens read per page: a page of drawing costs bounded time (files/pdf-text.ts reads as much). */
const MAX_PAGE_TOKENS = 2_000_000;

/**
 * Every text tag of `pdf`'s pages (`pages`: their geometry, as files/pdf-inspect.ts read it), and every tag that
 * cannot be read. Nothing is changed.
 */
export async function findTextTags(pdf: PDFDocument, pages: PageGeometry[]): Promise<{ tags: FoundTag[]; problems: TagProblem[] }> {
  const lib = await pdfLib();
  const tags: FoundTag[] = [];
  const problems: TagProblem[] = [];
  for (const [index, page] of pdf.getPages().entries()) {
    const geometry = pages[index];
    if (!geometry) break;
    const glyphs = pageGlyphs(lib, page.node);
    if (!glyphs) continue;
    for (const found of tagsIn(glyphs)) {
      const parsed = parseTag(found.text);
      if ("problem" in parsed) {
        problems.push({ page: index + 1, text: found.text, ...parsed.problem });
        continue;
      }
      if (!found.closed) continue;
      const box = percentBoxOf(geometry, boxOf(found.glyphs));
      tags.push({ page: index + 1, text: found.text, glyphs: found.glyphs, field: { ...parsed.field, page: index + 1, ...box } });
    }
  }
  if (tags.length > MAX_TAGS)
    problems.push({
      page: tags[MAX_TAGS]!.page,
      text: tags[MAX_TAGS]!.text,
      code: "too_many_tags",
      message: `The PDF has ${tags.length} tags; a document holds at most ${MAX_TAGS} fields`,
    });
  return { tags, problems };
}

/**
 * Takes `tags` (of `pdf`, found by findTextTags) out of their pages' content: each page that held one gets one new
 * content stream, its old one with the operators that showed a tag rewritten. Resources and everything else stay.
 */
export async function removeTextTags(pdf: PDFDocument, tags: FoundTag[]): Promise<void> {
  const lib = await pdfLib();
  const byPage = groupBy(tags, (t) => t.page);
  const pages = pdf.getPages();
  for (const [number, onPage] of byPage) {
    const node = pages[number - 1]!.node;
    const content = pageContent(lib, node);
    if (!content) continue;
    // The content decodes to the very bytes the tags were found in: their operators are found where they stood.
    const edits = groupBy(
      onPage.flatMap((t) => t.glyphs),
      (g) => g.shown.start,
    );
    const spans = [...edits.values()].map((cut) => ({ shown: cut[0]!.shown, cut })).sort((a, b) => a.shown.start - b.shown.start);
    const parts: Uint8Array[] = [];
    let at = 0;
    for (const { shown, cut } of spans) {
      parts.push(content.subarray(at, shown.start), new TextEncoder().encode(rewritten(shown, cut)));
      at = shown.end;
    }
    parts.push(content.subarray(at));
    const ref = pdf.context.register(pdf.context.flateStream(concat(parts)));
    node.set(lib.PDFName.of("Contents"), ref);
  }
}

/** A page's content streams decoded and joined ("\n" after each, as pdf-text reads them); null when one does not decode. */
function pageContent(lib: Lib, node: PDFPageLeaf): Uint8Array | null {
  const contents = node.Contents();
  if (!contents) return new Uint8Array();
  const parts = contents instanceof lib.PDFArray ? contents.asArray().map((p) => node.context.lookup(p)) : [contents];
  const bytes: Uint8Array[] = [];
  for (const part of parts) {
    try {
      if (part instanceof lib.PDFRawStream) bytes.push(lib.decodePDFRawStream(part).decode());
      else if (part instanceof lib.PDFFlateStream) bytes.push(part.getUnencodedContents());
      else return null;
    } catch {
      // Rewriting the page would lose this part: a page whose content does not decode is not searched.
      return null;
    }
    bytes.push(new Uint8Array([10]));
  }
  return concat(bytes);
}

/** Every glyph a page's content shows, in the order it shows them; null when its content cannot be read whole. */
function pageGlyphs(lib: Lib, node: PDFPageLeaf): Glyph[] | null {
  const content = pageContent(lib, node);
  if (!content) return null;
  const glyphs: Glyph[] = [];
  const fonts = new Map<PDFDict, Font>();
  walkText(
    lib,
    content,
    node.Resources(),
    startState(),
    {
      font(dict) {
        let font = fonts.get(dict);
        if (!font) {
          font = readFont(lib, dict);
          fonts.set(dict, font);
        }
        return font;
      },
      glyph: (g) => glyphs.push(g),
      more: () => true,
    },
    { tokens: MAX_PAGE_TOKENS },
  );
  return glyphs;
}

/** A `{{…}}` run in a page's text, with the glyphs from its first brace to its last; unclosed when no `}}` ends it. */
interface TagRun {
  text: string;
  glyphs: Glyph[];
  closed: boolean;
}

/** The tags in `glyphs`' text: from each "{{" to the "}}" after it, or to the next "{{" (unclosed), or to the page's end. */
function tagsIn(glyphs: Glyph[]): TagRun[] {
  let text = "";
  const owner: number[] = [];
  for (const [i, g] of glyphs.entries()) {
    text += g.text;
    for (let k = 0; k < g.text.length; k++) owner.push(i);
  }
  const runs: TagRun[] = [];
  for (let open = text.indexOf("{{"); open >= 0; ) {
    const close = text.indexOf("}}", open + 2);
    const next = text.indexOf("{{", open + 2);
    if (close < 0 || (next >= 0 && next < close)) {
      const end = next >= 0 ? next : text.length;
      runs.push({ text: text.slice(open, Math.min(end, open + QUOTE_CHARS)).trim(), glyphs: [], closed: false });
      open = next;
      continue;
    }
    runs.push({ text: text.slice(open, close + 2), glyphs: glyphs.slice(owner[open], owner[close + 1]! + 1), closed: true });
    open = text.indexOf("{{", close + 2);
  }
  return runs;
}

type ParsedTag = { field: Omit<RoleField, "page" | "x" | "y" | "width" | "height"> } | { problem: { code: string; message: string } };

/** A tag's text as a field, or why it cannot be one. */
function parseTag(text: string): ParsedTag {
  const bad = (code: string, message: string): ParsedTag => ({ problem: { code, message } });
  if (!text.endsWith("}}")) return bad("unclosed_tag", "The tag has no closing }}");
  const [head = "", ...rest] = text.slice(2, -2).split(";");
  const type = head.trim().toLowerCase() as TagType;
  if (!(TAG_TYPES as readonly string[]).includes(type))
    return bad("unknown_type", `${head.trim() || "(none)"} is not a field type (${TAG_TYPES.join(", ")})`);
  const values = new Map<string, string>();
  for (const part of rest) {
    const eq = part.indexOf("=");
    const key = (eq < 0 ? part : part.slice(0, eq)).trim().toLowerCase();
    const value = eq < 0 ? "" : part.slice(eq + 1).trim();
    if (eq < 0 || !key) return bad("invalid_option", `"${part.trim()}" is not key=value`);
    if (!KEYS.has(key)) return bad("unknown_option", `${key} is not an option of a tag (role, name, required, options)`);
    if (values.has(key)) return bad("duplicate_option", `${key} is given twice`);
    values.set(key, value);
  }
  const role = values.get("role") ?? "";
  if (!role) return bad("role_required", "The tag names no role (role=<key>)");
  if (role.length > MAX_ROLE) return bad("invalid_option", `A role is at most ${MAX_ROLE} characters`);
  const name = values.get("name");
  if (name !== undefined && (!name || name.length > MAX_NAME)) return bad("invalid_option", `A name is 1 to ${MAX_NAME} characters`);
  const required = values.get("required");
  if (required !== undefined && required !== "true" && required !== "false")
    return bad("invalid_option", `required is true or false, not ${required || "(empty)"}`);
  const given = values.get("options");
  const options = given === undefined ? null : given.split("|").map((o) => o.trim());
  if (options && !CHOICES.has(type)) return bad("options_not_allowed", `A ${type} field takes no options`);
  if (CHOICES.has(type) && !options?.length) return bad("options_required", `A ${type} field needs its options (options=a|b)`);
  if (options && (options.length > MAX_OPTIONS || options.some((o) => !o || o.length > MAX_OPTION)))
    return bad("invalid_option", `A field takes 1 to ${MAX_OPTIONS} options of 1 to ${MAX_OPTION} characters each`);
  return {
    field: {
      type,
      role,
      name: name ?? null,
      required: required === undefined ? type === "signature" || type === "initials" : required === "true",
      readOnly: false,
      value: null,
      options,
      validation: null,
    },
  };
}

/** The user-space rectangle around `glyphs`: each from its descent to its ascent, along its advance. */
function boxOf(glyphs: Glyph[]): [number, number, number, number] {
  const xs: number[] = [];
  const ys: number[] = [];
  for (const g of glyphs) {
    if (!g.text.trim()) continue;
    for (const m of [g.at, g.next])
      for (const ty of [g.font.descent * g.size, g.font.ascent * g.size]) {
        const [x, y] = apply(m, 0, ty);
        xs.push(x);
        ys.push(y);
      }
  }
  return xs.length ? [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)] : [0, 0, 0, 0];
}

const apply = (m: Matrix, x: number, y: number): [number, number] => [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]];

/**
 * An operator that showed tag glyphs (`cut`), written again without them: its strings as hex without the cut codes, a
 * TJ adjustment of each cut glyph's advance in their place (so what follows stays put); ' and " keep their line move
 * and spacing as operators of their own.
 */
function rewritten(shown: Shown, cut: Glyph[]): string {
  const last = shown.args.at(-1) ?? null;
  const items: Operand[] = shown.op === "TJ" ? (Array.isArray(last) ? last : []) : [last];
  const out: string[] = [];
  for (const [k, item] of items.entries()) {
    if (typeof item === "number") out.push(num(item));
    if (!(item instanceof Uint8Array)) continue;
    let at = 0;
    for (const g of cut.filter((c) => c.item === k).sort((a, b) => a.from - b.from)) {
      if (g.from > at) out.push(hex(item.subarray(at, g.from)));
      if (g.size !== 0) out.push(num((-1000 * g.advance) / g.size));
      at = g.to;
    }
    if (at < item.length) out.push(hex(item.subarray(at)));
  }
  const array = `[${out.join(" ")}] TJ`;
  const number = (v: Operand | undefined) => num(typeof v === "number" ? v : 0);
  if (shown.op === "'") return `T* ${array}`;
  if (shown.op === '"') return `${number(shown.args.at(-3))} Tw ${number(shown.args.at(-2))} Tc T* ${array}`;
  return array;
}

const num = (v: number) => String(Math.round(v * 10_000) / 10_000);
const hex = (b: Uint8Array) => `<${Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("")}>`;

function groupBy<T, K>(items: T[], keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
