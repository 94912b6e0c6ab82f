-- Obligation types are the spec's closed list (closing, condition_waiver, deposit_due, expiry, renewal). Leases
-- generated before it derived a `rent_start` obligation too; it is no longer derived, so its stored rows go, and
-- the list never answers a type outside the list.
DELETE FROM `document_obligations` WHERE `type` = 'rent_start';
