import { getTableColumns, type SQL, sql } from "drizzle-orm";
import { toSnakeCase } from "drizzle-orm/casing";
import { getTableConfig, type SQLiteColumn, type SQLiteTable } from "drizzle-orm/sqlite-core";

/**
 * A row as the JSON object of its stored columns, and back: how the trash keeps a deleted record's rows
 * (crm/trash.ts) and how a shard move carries an organization's rows between databases (shards/copy.ts).
 * `json_object` keeps integers, reals, text and NULL apart, so the row written back holds the same values; a BLOB,
 * which JSON cannot hold, travels as hex. Keys are the schema's camelCase property names.
 */

/** The columns a row is written back with (generated columns are computed, never written), in insert order. */
export const storedColumns = (table: SQLiteTable): [string, SQLiteColumn][] =>
  Object.entries(getTableColumns(table) as Record<string, SQLiteColumn>).filter(([, c]) => !(c.generated && c.generated.type !== "byDefault"));

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
