-- A user's open deal tasks falling due (src/deals/due-tasks.ts, the MCP tool my_tasks): one range of due_date per
-- assignee and state, walked in the list's order (due_date, id), so a page reads no task outside it.
CREATE INDEX `deal_tasks_assignee_due_idx` ON `deal_tasks` (`organization_id`,`assigned_to`,`completed`,`due_date`,`id`);
