import { type SQL, type SQLWrapper, sql } from "drizzle-orm";

/**
 * `column IN (…)` with the whole list bound as one JSON parameter. D1 allows at most 100 bound parameters per
 * statement, so a list of ids or tags must never become one parameter per item.
 */
export const inJsonList = (column: SQLWrapper, values: readonly (string | number)[]): SQL =>
  sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`;
