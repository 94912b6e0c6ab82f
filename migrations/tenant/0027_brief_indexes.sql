-- The daily brief's reads (src/brief/service.ts, the MCP tool daily_brief), each one index range: an assignee's active leads
-- never contacted, newest first; an organization's envelopes by status, oldest first. A user's tasks due read
-- the due-tasks index of 0026.
CREATE INDEX `contacts_org_uncontacted_leads_idx` ON `contacts` (`organization_id`,`assigned_to`,`created_at`,`id`) WHERE "contacts"."type" = 'LEAD' AND "contacts"."status" = 'ACTIVE' AND "contacts"."last_contacted_at" IS NULL;--> statement-breakpoint
CREATE INDEX `envelopes_org_status_idx` ON `envelopes` (`organization_id`,`status`,`created_at`,`id`);