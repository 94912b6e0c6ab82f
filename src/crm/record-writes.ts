import type { Statement } from "../db/write";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import { diffAttributes } from "../lib/changes";
import type { ServiceContext } from "../service-context";
import { bumpResourceCounter, type ListResource } from "./list-totals";

// What a write of a contact, a deal or a property does alike, written once: the fields a client may echo back, the
// list's counter, the `.updated` event of a change. Each resource names its own kind (contacts/writes.ts,
// deals/writes.ts, properties/writes.ts) and keeps what differs: its record's rules, its other events, its statements.
// What a write starts from (its row, read with the authentication) is crm/write-reads.ts.

/** A resource as its writes see it. */
export interface RecordKind<R, S extends object> {
  resource: ListResource;
  /** What a client may echo back from a read but never writes (its schemas.ts READ_ONLY_FIELDS). */
  readOnly: readonly string[];
  /** More to drop from an input than whole fields (a listing's price history), in the copy. */
  alsoReadOnly?: (copy: Record<string, unknown>) => void;
  /** The name of its change event (a whole literal: test/node/catalogue-emitters.test.ts looks for it). */
  updated: string;
  /** The record as the API and its events show it. */
  shown: (record: R) => S;
  /** What changes without the change being one (updatedAt …). */
  unchanged: readonly (keyof S & string)[];
}

export interface RecordWrites<R, S extends object> {
  /** The list's total (moved by `delta`) and its version, in the batch of every write (crm/list-totals.ts). */
  bumpCounters(ctx: ServiceContext, delta: number): Statement;
  /** `input` without what the resource never takes from one. */
  writableInput<T extends Record<string, unknown>>(input: T): T;
  /**
   * The `.updated` event of a change from `before` to `after` ({object, previousAttributes, changes}; `alsoChanged`
   * names changes the shown object cannot tell), with the object it shows; null when nothing but `unchanged` differs.
   */
  updated(ctx: ServiceContext, before: R, after: R, alsoChanged?: string[]): { object: S; event: DomainEvent } | null;
}

export function recordWrites<R, S extends object>(kind: RecordKind<R, S>): RecordWrites<R, S> {
  return {
    bumpCounters: (ctx, delta) => bumpResourceCounter(ctx.db, ctx.organizationId, kind.resource, delta),
    writableInput<T extends Record<string, unknown>>(input: T): T {
      const copy: Record<string, unknown> = { ...input };
      for (const f of kind.readOnly) delete copy[f];
      kind.alsoReadOnly?.(copy);
      return copy as T;
    },
    updated(ctx, before, after, alsoChanged = []) {
      const object = kind.shown(after);
      const { changes, previousAttributes } = diffAttributes(
        kind.shown(before) as Record<string, unknown>,
        object as Record<string, unknown>,
        [...kind.unchanged],
      );
      changes.push(...alsoChanged);
      if (changes.length === 0) return null;
      return { object, event: newEvent(ctx, kind.updated, { object, previousAttributes, changes }) };
    },
  };
}
