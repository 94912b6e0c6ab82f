import { getTableColumns, type SQL, sql } from "drizzle-orm";
import { toSnakeCase } from "drizzle-orm/casing";
import { getTableConfig, type SQLiteColumn, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { chunkBySize } from "../lib/sql";
import type { Db } from "./client";
import type { Statement } from "./write";

/**
 * A row as the JSON object of its stored columns, and back: how the trash keeps a deleted record's rows
 * (crm/trash.ts) and how a shard move carries an organization's rows between databases (shards/copy.ts).
 * `json_object` keeps integers, reals, text and NULL apart, so the row written back holds the same values; a BLOB,
 * which JSON cannot hold, travels as hex. Keys are the schema's camelCase property names.
 */

/** The columns a row is written back with (generated columns are computed, never written), in insert order. */
export const storedColumns = (table: SQLiteTable): [string, SQLiteColumn][] =>
  Object.entries(getTableColumns(table) as Record<string, SQLiteColumn>).filter(
    ([, c]) => !(c.generated && c.generated.type !== "byDefault"),
  );

export const tableName = (table: SQLiteTable) => getTableConfig(table).name;

/** A column's name in the database: the schema names most columns by their property, in snake_case (db/client.ts). */
export const columnName = (column: SQLiteColumn) => (column.keyAsName ? toSnakeCase(column.name) : column.name);

const isBlob = (column: SQLiteColumn) => column.getSQLType() === "blob";

/** `json_object(…)` of a row of `table`: its stored columns by property name. */
export function rowJson(table: SQLiteTable): SQL {
  // Property names are the schema's own identifiers: safe to write into SQL as literals.
  const fields = storedColumns(table).map(([key, column]) => sql`${sql.raw(`'${key}'`)}, ${isBlob(column) ? sql`hex(${column})` : column}`);
  return sql`json_object(${sql.join(fields, sql`, `)})`;
}

/** The stored columns' values read out of the JSON text in `source` (a column or json_each's `value`), in insert order. */
export function valuesFromJson(table: SQLiteTable, source: string): SQL {
  const values = storedColumns(table).map(([key, column]) => {
    const value = `json_extract(${source}, '$.${key}')`;
    return sql.raw(isBlob(column) ? `unhex(${value})` : value);
  });
  return sql.join(values, sql`, `);
}

/** A record of `table` as the JSON object `valuesFromJson` reads: each stored column's value as the driver stores it. */
export function driverRow(table: SQLiteTable, record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, column] of storedColumns(table)) {
    const value = record[key];
    out[key] = value === null || value === undefined ? null : column.mapToDriverValue(value);
  }
  return out;
}

/** The JSON text of the rows passed to one statement, at most (D1 holds a bound value to 2 MB). */
const MAX_ROWS_JSON = 900 * 1024;

/**
 * Many new rows of `table` in as few statements as fit: each binds one JSON array of rows (D1 binds at most 100
 * values per statement, so one parameter per column would take a statement per row).
 */
export function insertRowsFromJson(db: Db, table: SQLiteTable, records: Record<string, unknown>[]): Statement[] {
  const groups = chunkBySize(
    records.map((r) => JSON.stringify(driverRow(table, r))),
    MAX_ROWS_JSON,
  );
  return groups.map((g) =>
    db.insert(table).select(sql`SELECT ${valuesFromJson(table, "value")} FROM json_each(${`[${g.join(",")}]`}) WHERE true`),
  );
}
