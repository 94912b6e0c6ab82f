-- The daily brief's reads (src/brief/service.ts, the MCP tool daily_brief), each one index range: an assignee's active leads
-- never contacted, newest first; an assignee's open tasks with a due date, soonest first (partial: completed tasks and
-- tasks without a date are never read by it); an organization's envelopes by status, oldest first.
CREATE INDEX `contacts_org_uncontacted_leads_idx` ON `contacts` (`organization_id`,`assigned_to`,`created_at`,`id`) WHERE "contacts"."type" = 'LEAD' AND "contacts"."status" = 'ACTIVE' AND "contacts"."last_contacted_at" IS NULL;--> statement-breakpoint
CREATE INDEX `envelopes_org_status_idx` ON `envelopes` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `deal_tasks_org_assignee_due_idx` ON `deal_tasks` (`organization_id`,`assigned_to`,`due_date`,`id`) WHERE "deal_tasks"."completed" = 0 AND "deal_tasks"."due_date" IS NOT NULL;