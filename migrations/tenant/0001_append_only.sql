-- Append-only records (issues 10 and 12): the signing audit trail and clickwrap acceptances are never updated or deleted.
CREATE TRIGGER `envelope_audit_no_update` BEFORE UPDATE ON `envelope_audit` BEGIN SELECT RAISE(ABORT, 'envelope_audit is append-only'); END;--> statement-breakpoint
CREATE TRIGGER `envelope_audit_no_delete` BEFORE DELETE ON `envelope_audit` BEGIN SELECT RAISE(ABORT, 'envelope_audit is append-only'); END;--> statement-breakpoint
CREATE TRIGGER `clickwrap_acceptances_no_update` BEFORE UPDATE ON `clickwrap_acceptances` BEGIN SELECT RAISE(ABORT, 'clickwrap acceptances are immutable'); END;--> statement-breakpoint
CREATE TRIGGER `clickwrap_acceptances_no_delete` BEFORE DELETE ON `clickwrap_acceptances` BEGIN SELECT RAISE(ABORT, 'clickwrap acceptances are immutable'); END;
