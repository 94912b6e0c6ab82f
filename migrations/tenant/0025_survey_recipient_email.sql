-- An EMAIL survey's recipient address as scheduled (issue 40, src/surveys/invitations.ts): the cron mails the link
-- only while the contact still has it, so a contact re-addressed or merged since is not sent a survey about another
-- agent. Null for LINK surveys and for rows from before.
ALTER TABLE `surveys` ADD `recipient_email_key` text;
