import { getTableColumns, is, type SQL, sql } from "drizzle-orm";
import { getTableConfig, SQLiteTable, type SQLiteColumn } from "drizzle-orm/sqlite-core";
import * as clickwrap from "../db/clickwrap";
import * as contacts from "../db/contacts";
import * as customFields from "../db/custom-fields";
import * as deals from "../db/deals";
import * as documentVectors from "../db/document-vectors";
import * as documents from "../db/documents";
import * as imports from "../db/imports";
import * as exportsTable from "../db/exports";
import * as members from "../db/members";
import * as obligations from "../db/obligations";
import * as platform from "../db/platform";
import * as plants from "../db/plants";
import * as properties from "../db/properties";
import * as referrals from "../db/referrals";
import * as reputation from "../db/reputation";
import * as search from "../db/search";
import * as signatures from "../db/signatures";
import * as surveys from "../db/surveys";
import * as templates from "../db/templates";
import * as trash from "../db/trash";
import * as uploads from "../db/uploads";
import * as webhooks from "../db/webhooks";
import * as agenda from "../db/agenda";
import * as plans from "../db/plans";
import * as smartLists from "../db/smart-lists";
import * as ponds from "../db/ponds";
import { columnName } from "../db/row-json";

/**
 * What a shard move carries: every table of the tenant schema (the files drizzle.tenant.config.ts lists),
 * each with the predicate that selects one organization's rows and the key its rows are walked in. A table is moved
 * unless it is named here as holding no organization's rows; one without an organization column must say how its rows
 * are found, or this module fails to load. test/shards/shard-move.test.ts checks the list against the shards' own tables.
 */
const TENANT_SCHEMA = [
  members,
  platform,
  plants,
  contacts,
  webhooks,
  documents,
  signatures,
  reputation,
  properties,
  deals,
  clickwrap,
  obligations,
  documentVectors,
  referrals,
  surveys,
  trash,
  uploads,
  search,
  customFields,
  imports,
  exportsTable,
  templates,
  agenda,
  plans,
  smartLists,
  ponds,
];

/**
 * Tables on a shard the move neither copies nor fences: those that hold no organization's rows (the batch guard,
 * always empty; the move's own fences; the search's character map; its suspensions, empty outside a batch), and the search index, which triggers on the
 * moved tables write as the copy lands each record on the target and delete as the cleanup takes it off the source
 * (migration 0012): copying it too would move every term twice.
 */
export const NOT_MOVED = new Set(["write_guards", "shard_fences", "search_fold", "search_terms", "search_suspended"]);

/**
 * Rows scoped through another table's row (no organization column of their own): the parent is moved before them and
 * deleted after them, and the fence triggers (migrations/tenant/0003) find the organization the same way.
 */
const SCOPED_THROUGH: Record<string, { parent: string; parentKey: string; column: string }> = {
  processed_events: { parent: "outbox_events", parentKey: "id", column: "event_id" },
  property_daily_referrers: { parent: "properties", parentKey: "id", column: "property_id" },
  property_daily_visitors: { parent: "properties", parentKey: "id", column: "property_id" },
};

export interface MovedTable {
  name: string;
  table: SQLiteTable;
  /** The columns rows are walked in, unique per row: the primary key (or the unique index of a table without one). */
  key: SQLiteColumn[];
  /** The organization's rows. */
  of(organizationId: string): SQL;
  /** For a table without an organization column: the parent row its rows are found through. */
  through?: { parent: string; parentKey: string; column: string };
}

const column = (table: SQLiteTable, name: string) => {
  const found = Object.values(getTableColumns(table) as Record<string, SQLiteColumn>).find((c) => columnName(c) === name);
  if (!found) throw new Error(`${getTableConfig(table).name} has no column ${name}`);
  return found;
};

function keyOf(table: SQLiteTable): SQLiteColumn[] {
  const config = getTableConfig(table);
  const composite = config.primaryKeys[0]?.columns;
  if (composite) return composite as SQLiteColumn[];
  const single = config.columns.filter((c) => c.primary);
  if (single.length > 0) return single as SQLiteColumn[];
  const unique = config.indexes.find((i) => i.config.unique)?.config.columns;
  if (unique) return unique as SQLiteColumn[];
  throw new Error(`${config.name} has neither a primary key nor a unique index to walk its rows in`);
}

/**
 * A key of one integer column is the rowid (INTEGER PRIMARY KEY, AUTOINCREMENT) or another number each database
 * counts: two shards give different rows the same key, and a move would take one for the other.
 */
function refuseCounterKey(name: string, key: SQLiteColumn[]) {
  if (key.length === 1 && key[0]!.getSQLType() === "integer")
    throw new Error(
      `${name}: keyed by ${columnName(key[0]!)}, a number counted per database; key a moved table by ids unique across shards`,
    );
}

function moved(table: SQLiteTable): MovedTable {
  const name = getTableConfig(table).name;
  const key = keyOf(table);
  refuseCounterKey(name, key);
  if (name === "organizations") return { name, table, key, of: (org) => sql`${column(table, "id")} = ${org}` };
  const through = SCOPED_THROUGH[name];
  if (through) {
    const scoped = column(table, through.column);
    return {
      name,
      table,
      key,
      through,
      of: (org) =>
        sql`${scoped} IN (SELECT ${sql.identifier(through.parentKey)} FROM ${sql.identifier(through.parent)} WHERE organization_id = ${org})`,
    };
  }
  const organizationId = Object.values(getTableColumns(table) as Record<string, SQLiteColumn>).find(
    (c) => columnName(c) === "organization_id",
  );
  if (!organizationId)
    throw new Error(`${name}: a tenant table needs an organization_id column, a SCOPED_THROUGH entry, or a place in NOT_MOVED`);
  return { name, table, key, of: (org) => sql`${organizationId} = ${org}` };
}

const all = TENANT_SCHEMA.flatMap((module) => Object.values(module).filter((value): value is SQLiteTable => is(value, SQLiteTable)))
  .filter((table) => !NOT_MOVED.has(getTableConfig(table).name))
  .map(moved);

/**
 * In copy order: the schema's order (organizations, then members, then the rest), tables scoped through a parent
 * last. The cleanup deletes in the reverse order, so a member goes before its organization and a scoped row before
 * the parent that finds it.
 */
export const MOVED_TABLES: MovedTable[] = [...all.filter((t) => !SCOPED_THROUGH[t.name]), ...all.filter((t) => SCOPED_THROUGH[t.name])];
