/** What changed between two versions of a resource, in the webhook payload's terms (spec: Payload structure). */
export interface AttributeChanges {
  /** Changed attribute names, dotted for nested objects ("address.city"); arrays count as one attribute. */
  changes: string[];
  /** Prior values of the changed top-level attributes. */
  previousAttributes: Record<string, unknown>;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function changedPaths(before: unknown, after: unknown, path: string): string[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...keys].sort().flatMap((k) => changedPaths(before[k], after[k], path ? `${path}.${k}` : k));
  }
  return JSON.stringify(before ?? null) === JSON.stringify(after ?? null) ? [] : [path];
}

export function diffAttributes<T extends Record<string, unknown>>(before: T, after: T, ignore: (keyof T)[] = []): AttributeChanges {
  const changes: string[] = [];
  const previousAttributes: Record<string, unknown> = {};
  for (const key of Object.keys(after)) {
    if (ignore.includes(key)) continue;
    const paths = changedPaths(before[key], after[key], key);
    if (paths.length === 0) continue;
    changes.push(...paths);
    previousAttributes[key] = before[key] ?? null;
  }
  return { changes, previousAttributes };
}
