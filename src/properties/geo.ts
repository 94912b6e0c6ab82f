/**
 * Geometry of the list's geo filters on a spherical Earth. A point is also stored as its unit vector (x, y, z), so
 * "within r miles of P" is `dot(point, P) >= cos(r / R)`, exact for great circles and plain arithmetic in SQL. The
 * bounding box that comes first narrows the rows through the (organization, latitude, longitude) index.
 */
export const EARTH_RADIUS_MILES = 3958.8;
const RAD = Math.PI / 180;

export interface UnitVector {
  x: number;
  y: number;
  z: number;
}

export function unitVector(latitude: number, longitude: number): UnitVector {
  const lat = latitude * RAD;
  const lng = longitude * RAD;
  return { x: Math.cos(lat) * Math.cos(lng), y: Math.cos(lat) * Math.sin(lng), z: Math.sin(lat) };
}

/** Great-circle distance in miles (haversine, stable for short distances). */
export function distanceMiles(a: { latitude: number; longitude: number }, b: { latitude: number; longitude: number }): number {
  const dLat = (b.latitude - a.latitude) * RAD;
  const dLng = (b.longitude - a.longitude) * RAD;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.latitude * RAD) * Math.cos(b.latitude * RAD) * Math.sin(dLng / 2) ** 2;
  return 2 * EARTH_RADIUS_MILES * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** A latitude band and the longitude ranges inside it (two ranges when the box crosses the antimeridian). */
export interface GeoBox {
  south: number;
  north: number;
  /** null: every longitude (the box holds a pole, or is wider than the globe). */
  longitudes: [number, number][] | null;
}

/** The box of `bounds`: west above east means the box crosses the antimeridian. */
export function boundsBox(b: { south: number; west: number; north: number; east: number }): GeoBox {
  return {
    south: b.south,
    north: b.north,
    longitudes:
      b.west <= b.east
        ? [[b.west, b.east]]
        : [
            [b.west, 180],
            [-180, b.east],
          ],
  };
}

/**
 * The smallest latitude/longitude box around the spherical cap of `miles` around a point. Near a pole, or when the
 * cap reaches over one, every longitude is in; otherwise the longitude half-width is asin(sin r / cos lat), wrapped
 * across the antimeridian when it passes ±180.
 */
export function radiusBox(center: { latitude: number; longitude: number }, miles: number): GeoBox {
  const r = miles / EARTH_RADIUS_MILES;
  const south = center.latitude - r / RAD;
  const north = center.latitude + r / RAD;
  if (north >= 90 || south <= -90) return { south: Math.max(-90, south), north: Math.min(90, north), longitudes: null };
  const half = Math.asin(Math.min(1, Math.sin(r) / Math.cos(center.latitude * RAD))) / RAD;
  const west = center.longitude - half;
  const east = center.longitude + half;
  if (half >= 180) return { south, north, longitudes: null };
  if (west < -180)
    return {
      south,
      north,
      longitudes: [
        [west + 360, 180],
        [-180, east],
      ],
    };
  if (east > 180)
    return {
      south,
      north,
      longitudes: [
        [west, 180],
        [-180, east - 360],
      ],
    };
  return { south, north, longitudes: [[west, east]] };
}

/** SQL for "inside the box" over a table alias's latitude/longitude columns. */
export function boxSql(alias: string, box: GeoBox): { sql: string; params: number[] } {
  const parts = [`${alias}.latitude BETWEEN ? AND ?`];
  const params = [box.south, box.north];
  if (box.longitudes) {
    parts.push(`(${box.longitudes.map(() => `${alias}.longitude BETWEEN ? AND ?`).join(" OR ")})`);
    for (const [w, e] of box.longitudes) params.push(w, e);
  }
  return { sql: parts.join(" AND "), params };
}

/** SQL for "within `miles` great-circle distance": the dot product with the centre's unit vector. */
export function radiusSql(
  alias: string,
  center: { latitude: number; longitude: number },
  miles: number,
): { sql: string; params: number[] } {
  const v = unitVector(center.latitude, center.longitude);
  // A hair of slack absorbs floating point at the boundary; points exactly on the circle are in.
  const minDot = Math.cos(miles / EARTH_RADIUS_MILES) - 1e-12;
  return { sql: `(${alias}.geo_x * ? + ${alias}.geo_y * ? + ${alias}.geo_z * ?) >= ?`, params: [v.x, v.y, v.z, minDot] };
}
