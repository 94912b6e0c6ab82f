/**
 * Where a box on a page as a reader sees it lands in the page's own coordinates, and back (issue 44). The API speaks
 * of a page as displayed: its width and height after `/Rotate` (clockwise, a multiple of 90), from the CropBox, and
 * boxes in percent of those with the origin at the top-left corner. A PDF draws in user space: origin at the
 * bottom-left of the unrotated MediaBox, y up, and the CropBox anywhere inside it.
 */
export interface PageGeometry {
  /** The CropBox in user space: [x0, y0, x1, y1] with x0 < x1, y0 < y1. */
  crop: [number, number, number, number];
  /** /Rotate, normalized to 0, 90, 180 or 270 (clockwise, as the page is shown). */
  rotation: 0 | 90 | 180 | 270;
}

/** A box in percent (0 to 100) of the displayed page, origin top-left. */
export interface PercentBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * A box in user space, and how to draw upright in it: `origin` is the box's displayed bottom-left corner in user
 * space, `rotate` the counter-clockwise angle text and images take there (the page's rotation), `width` and `height`
 * the box's size as displayed, in points.
 */
export interface PlacedBox {
  origin: { x: number; y: number };
  rotate: 0 | 90 | 180 | 270;
  width: number;
  height: number;
  /** The same box as an axis-aligned rectangle in user space (for a widget's /Rect, or a test). */
  rect: { x: number; y: number; width: number; height: number };
}

/** /Rotate as the spec allows it (any multiple of 90, negative too), normalized; anything else reads as 0. */
export function normalizeRotation(value: number): PageGeometry["rotation"] {
  if (!Number.isInteger(value) || value % 90 !== 0) return 0;
  return (((value % 360) + 360) % 360) as PageGeometry["rotation"];
}

/** The page's size as displayed, in points. */
export function displayedSize(g: PageGeometry): { width: number; height: number } {
  const w = g.crop[2] - g.crop[0];
  const h = g.crop[3] - g.crop[1];
  return g.rotation === 90 || g.rotation === 270 ? { width: h, height: w } : { width: w, height: h };
}

/** A displayed point in points (origin top-left, y down) as a user-space point. */
function toUser(g: PageGeometry, dx: number, dy: number): { x: number; y: number } {
  const [x0, y0, x1, y1] = g.crop;
  switch (g.rotation) {
    case 0:
      return { x: x0 + dx, y: y1 - dy };
    case 90:
      return { x: x0 + dy, y: y0 + dx };
    case 180:
      return { x: x1 - dx, y: y0 + dy };
    case 270:
      return { x: x1 - dy, y: y1 - dx };
  }
}

/** A user-space point as a displayed point in points (origin top-left, y down). */
function toDisplayed(g: PageGeometry, ux: number, uy: number): { x: number; y: number } {
  const [x0, y0, x1, y1] = g.crop;
  switch (g.rotation) {
    case 0:
      return { x: ux - x0, y: y1 - uy };
    case 90:
      return { x: uy - y0, y: ux - x0 };
    case 180:
      return { x: x1 - ux, y: uy - y0 };
    case 270:
      return { x: y1 - uy, y: x1 - ux };
  }
}

/** Where a displayed box in percent lands in user space. */
export function placeBox(g: PageGeometry, box: PercentBox): PlacedBox {
  const size = displayedSize(g);
  const left = (box.x / 100) * size.width;
  const top = (box.y / 100) * size.height;
  const width = (box.width / 100) * size.width;
  const height = (box.height / 100) * size.height;
  const a = toUser(g, left, top);
  const b = toUser(g, left + width, top + height);
  return {
    origin: toUser(g, left, top + height),
    rotate: g.rotation,
    width,
    height,
    rect: { x: Math.min(a.x, b.x), y: Math.min(a.y, b.y), width: Math.abs(b.x - a.x), height: Math.abs(b.y - a.y) },
  };
}

/** A user-space rectangle (a form field's widget /Rect) as a displayed box in percent, clipped to the page. */
export function percentBoxOf(g: PageGeometry, rect: [number, number, number, number]): PercentBox {
  const size = displayedSize(g);
  const a = toDisplayed(g, rect[0], rect[1]);
  const b = toDisplayed(g, rect[2], rect[3]);
  const clip = (v: number, max: number) => Math.min(Math.max(v, 0), max);
  const left = clip(Math.min(a.x, b.x), size.width);
  const right = clip(Math.max(a.x, b.x), size.width);
  const top = clip(Math.min(a.y, b.y), size.height);
  const bottom = clip(Math.max(a.y, b.y), size.height);
  const pct = (v: number, of: number) => Math.round((v / of) * 100 * 1000) / 1000;
  return {
    x: pct(left, size.width),
    y: pct(top, size.height),
    width: pct(right - left, size.width),
    height: pct(bottom - top, size.height),
  };
}
