-- Issue 40: a broad search's total counts its matches among the list's first rows only (src/crm/search.ts
-- WALK_BUDGET), a lower bound unless those rows are the whole list; the cached total keeps which it is, so a cached
-- answer says `totalExact` as the count did. Totals cached before were exact counts: 1.
ALTER TABLE `list_totals` ADD `exact` integer DEFAULT 1 NOT NULL;
