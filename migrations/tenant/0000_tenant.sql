CREATE TABLE `organizations` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `organizations_name_unique` ON `organizations` (`name`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`email` text NOT NULL,
	`name` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_organization_email_unique` ON `users` (`organization_id`,`email`);--> statement-breakpoint
CREATE INDEX `users_email_lower_idx` ON `users` (lower("email"));--> statement-breakpoint
CREATE TABLE `audit_log` (
	`event_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`actor_user_id` text,
	`occurred_at` text NOT NULL,
	`recorded_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_log_org_idx` ON `audit_log` (`organization_id`,`occurred_at`);--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`organization_id` text NOT NULL,
	`key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`state` text NOT NULL,
	`response_status` integer,
	`response_headers` text,
	`response_body` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_expires_idx` ON `idempotency_keys` (`expires_at`);--> statement-breakpoint
CREATE TABLE `list_totals` (
	`organization_id` text NOT NULL,
	`resource` text NOT NULL,
	`filter_key` text NOT NULL,
	`version` integer NOT NULL,
	`total` integer NOT NULL,
	PRIMARY KEY(`organization_id`, `resource`, `filter_key`)
);
--> statement-breakpoint
CREATE TABLE `outbox_events` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`actor` text NOT NULL,
	`occurred_at` text NOT NULL,
	`data` text NOT NULL,
	`sent_at` text,
	`send_attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` text,
	`last_error` text,
	`dead_at` text
);
--> statement-breakpoint
CREATE INDEX `outbox_events_due_idx` ON `outbox_events` (`next_attempt_at`);--> statement-breakpoint
CREATE TABLE `processed_events` (
	`consumer` text NOT NULL,
	`event_id` text NOT NULL,
	`claimed_at` text NOT NULL,
	`processed_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `processed_events_pk` ON `processed_events` (`consumer`,`event_id`);--> statement-breakpoint
CREATE TABLE `resource_counters` (
	`organization_id` text NOT NULL,
	`resource` text NOT NULL,
	`total` integer DEFAULT 0 NOT NULL,
	`version` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `resource`)
);
--> statement-breakpoint
CREATE TABLE `write_guards` (
	`failed` text NOT NULL,
	CONSTRAINT "write_guard_failed" CHECK(failed IS NULL)
);
--> statement-breakpoint
CREATE TABLE `plants` (
	`organization_id` text NOT NULL,
	`id` integer NOT NULL,
	`name` text NOT NULL,
	`tag` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	PRIMARY KEY(`organization_id`, `id`)
);
--> statement-breakpoint
CREATE TABLE `contact_activities` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`type` text NOT NULL,
	`description` text,
	`scheduled_at` text,
	`metadata` text,
	`created_by` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `contact_activities_contact_idx` ON `contact_activities` (`organization_id`,`contact_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `contact_facet_counts` (
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`source` text NOT NULL,
	`assigned_to` text NOT NULL,
	`total` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `type`, `status`, `source`, `assigned_to`)
);
--> statement-breakpoint
CREATE TABLE `contact_tags` (
	`contact_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`tag` text NOT NULL,
	PRIMARY KEY(`contact_id`, `tag`)
);
--> statement-breakpoint
CREATE INDEX `contact_tags_org_tag_idx` ON `contact_tags` (`organization_id`,`tag`,`contact_id`);--> statement-breakpoint
CREATE TABLE `contacts` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`first_name` text NOT NULL,
	`last_name` text NOT NULL,
	`email` text NOT NULL,
	`email_key` text NOT NULL,
	`phone` text,
	`secondary_phone` text,
	`address` text,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`source` text,
	`lead_score` integer,
	`lead_score_rank` integer GENERATED ALWAYS AS (ifnull(lead_score, -1)) VIRTUAL,
	`lead_score_auto` integer DEFAULT false NOT NULL,
	`tags` text NOT NULL,
	`notes` text,
	`preferences` text,
	`assigned_to` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`last_contacted_at` text,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `contacts_org_email_unique` ON `contacts` (`organization_id`,`email_key`);--> statement-breakpoint
CREATE INDEX `contacts_org_created_idx` ON `contacts` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_updated_idx` ON `contacts` (`organization_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_last_name_idx` ON `contacts` (`organization_id`,"last_name" COLLATE NOCASE,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_lead_score_idx` ON `contacts` (`organization_id`,`lead_score_rank`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_type_idx` ON `contacts` (`organization_id`,`type`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_status_idx` ON `contacts` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_source_idx` ON `contacts` (`organization_id`,`source`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_assigned_idx` ON `contacts` (`organization_id`,`assigned_to`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `tags` (
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`color` text NOT NULL,
	`created_at` text NOT NULL,
	`contact_count` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `name`)
);
--> statement-breakpoint
CREATE INDEX `tags_org_count_idx` ON `tags` (`organization_id`,"contact_count" DESC,`name`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`subscription_id` text NOT NULL,
	`event_id` text NOT NULL,
	`event` text NOT NULL,
	`body` text NOT NULL,
	`status` text NOT NULL,
	`attempt_count` integer DEFAULT 0 NOT NULL,
	`last_status_code` integer,
	`last_error` text,
	`next_attempt_at` text,
	`delivered_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_subscription_event_unique` ON `webhook_deliveries` (`subscription_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_subscription_created_idx` ON `webhook_deliveries` (`subscription_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_event_idx` ON `webhook_deliveries` (`event_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_status_updated_idx` ON `webhook_deliveries` (`status`,`updated_at`);--> statement-breakpoint
CREATE TABLE `webhook_delivery_attempts` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`delivery_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`status_code` integer,
	`duration_ms` integer NOT NULL,
	`error` text,
	`next_attempt_at` text,
	`attempted_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_delivery_attempts_delivery_idx` ON `webhook_delivery_attempts` (`delivery_id`,`attempted_at`);--> statement-breakpoint
CREATE TABLE `webhook_subscriptions` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`url` text NOT NULL,
	`events` text NOT NULL,
	`filters` text NOT NULL,
	`enabled` integer NOT NULL,
	`description` text NOT NULL,
	`secret_ciphertext` text NOT NULL,
	`disabled_reason` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_subscriptions_org_created_idx` ON `webhook_subscriptions` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `document_overages` (
	`document_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`period` text NOT NULL,
	`position` integer NOT NULL,
	`included` integer NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `document_overages_org_period_idx` ON `document_overages` (`organization_id`,`period`);--> statement-breakpoint
CREATE TABLE `document_usage` (
	`organization_id` text NOT NULL,
	`period` text NOT NULL,
	`used` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `period`)
);
--> statement-breakpoint
CREATE TABLE `documents` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`form_key` text NOT NULL,
	`status` text NOT NULL,
	`canonical` text NOT NULL,
	`sha256` text NOT NULL,
	`deal_id` text,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `documents_org_created_idx` ON `documents` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `mail_outbox` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text,
	`to` text NOT NULL,
	`subject` text NOT NULL,
	`body` text NOT NULL,
	`sealed` integer NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `mail_outbox_to_idx` ON `mail_outbox` (`to`,`created_at`);--> statement-breakpoint
CREATE TABLE `envelope_audit` (
	`envelope_id` text NOT NULL,
	`seq` integer NOT NULL,
	`organization_id` text NOT NULL,
	`event` text NOT NULL,
	`signer_id` text,
	`at` text NOT NULL,
	`ip` text,
	`user_agent` text,
	`data` text,
	`prev_hash` text NOT NULL,
	`hash` text NOT NULL,
	PRIMARY KEY(`envelope_id`, `seq`)
);
--> statement-breakpoint
CREATE TABLE `envelope_signers` (
	`id` text PRIMARY KEY NOT NULL,
	`envelope_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`position` integer NOT NULL,
	`name` text NOT NULL,
	`email` text NOT NULL,
	`role` text NOT NULL,
	`status` text NOT NULL,
	`sent_at` text,
	`signed_at` text,
	`declined_at` text,
	`verification` text,
	`remind_at` text
);
--> statement-breakpoint
CREATE INDEX `envelope_signers_envelope_idx` ON `envelope_signers` (`envelope_id`,`position`);--> statement-breakpoint
CREATE INDEX `envelope_signers_remind_idx` ON `envelope_signers` (`remind_at`);--> statement-breakpoint
CREATE TABLE `envelopes` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`document_id` text NOT NULL,
	`status` text NOT NULL,
	`mode` text NOT NULL,
	`expires_at` text,
	`completed_at` text,
	`ended_reason` text,
	`certificate_key` text,
	`signer_verification` text DEFAULT 'attested' NOT NULL,
	`document_key` text,
	`document_title` text,
	`document_sha256` text,
	`reminders` text,
	`expiry_notice_at` text,
	`sealed_key` text,
	`sealed_sha256` text,
	`chain_seal` text,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `envelopes_org_document_idx` ON `envelopes` (`organization_id`,`document_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `envelopes_status_expires_idx` ON `envelopes` (`status`,`expires_at`);--> statement-breakpoint
CREATE INDEX `envelopes_expiry_notice_idx` ON `envelopes` (`expiry_notice_at`);--> statement-breakpoint
CREATE INDEX `envelopes_sealed_sha256_idx` ON `envelopes` (`sealed_sha256`);--> statement-breakpoint
CREATE TABLE `signature_settings` (
	`organization_id` text PRIMARY KEY NOT NULL,
	`signer_verification` text DEFAULT 'attested' NOT NULL,
	`reminders` text,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `signing_links` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`envelope_id` text NOT NULL,
	`signer_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `signing_links_envelope_idx` ON `signing_links` (`envelope_id`);--> statement-breakpoint
CREATE TABLE `agent_profiles` (
	`organization_id` text NOT NULL,
	`user_id` text NOT NULL,
	`slug` text NOT NULL,
	`status` text NOT NULL,
	`draft_config` text NOT NULL,
	`published_config` text,
	`published_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	PRIMARY KEY(`organization_id`, `user_id`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `agent_profiles_slug_unique` ON `agent_profiles` (`slug`);--> statement-breakpoint
CREATE TABLE `reputation_aggregates` (
	`organization_id` text NOT NULL,
	`agent_user_id` text NOT NULL,
	`total_reviews` integer DEFAULT 0 NOT NULL,
	`rating_sum` integer DEFAULT 0 NOT NULL,
	`average_rating` real,
	`rating1` integer DEFAULT 0 NOT NULL,
	`rating2` integer DEFAULT 0 NOT NULL,
	`rating3` integer DEFAULT 0 NOT NULL,
	`rating4` integer DEFAULT 0 NOT NULL,
	`rating5` integer DEFAULT 0 NOT NULL,
	`first_published_at` text,
	`nps_promoters` integer DEFAULT 0 NOT NULL,
	`nps_passives` integer DEFAULT 0 NOT NULL,
	`nps_detractors` integer DEFAULT 0 NOT NULL,
	`surveys_sent` integer DEFAULT 0 NOT NULL,
	`surveys_completed` integer DEFAULT 0 NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `agent_user_id`)
);
--> statement-breakpoint
CREATE TABLE `testimonials` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`agent_user_id` text NOT NULL,
	`author_person_id` text,
	`deal_id` text,
	`source` text NOT NULL,
	`category` text NOT NULL,
	`rating` integer NOT NULL,
	`headline` text,
	`body` text NOT NULL,
	`display_name` text,
	`display_location` text,
	`display_photo_url` text,
	`permission_to_publish_name` integer NOT NULL,
	`permission_to_publish_location` integer NOT NULL,
	`permission_to_publish_photo` integer NOT NULL,
	`status` text NOT NULL,
	`visibility` text NOT NULL,
	`is_featured` integer NOT NULL,
	`sort_order` integer NOT NULL,
	`approved_by_user_id` text,
	`approved_at` text,
	`published_at` text,
	`rejected_at` text,
	`rejection_reason` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `testimonials_org_order_idx` ON `testimonials` (`organization_id`,`sort_order`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `testimonials_org_agent_status_idx` ON `testimonials` (`organization_id`,`agent_user_id`,`status`,`published_at`);--> statement-breakpoint
CREATE TABLE `properties` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`mls_id` text,
	`address` text NOT NULL,
	`details` text NOT NULL,
	`listing` text NOT NULL,
	`features` text,
	`media` text,
	`photos` text NOT NULL,
	`valuation` text,
	`marketing` text,
	`hoa` text,
	`taxes` text,
	`disclosure` text,
	`city` text NOT NULL,
	`state` text NOT NULL,
	`zip_code` text NOT NULL,
	`latitude` real,
	`longitude` real,
	`geo_x` real,
	`geo_y` real,
	`geo_z` real,
	`property_type` text NOT NULL,
	`bedrooms` integer,
	`bathrooms` real,
	`square_footage` integer,
	`year_built` integer,
	`garage` integer NOT NULL,
	`pool` integer NOT NULL,
	`waterfront` integer NOT NULL,
	`status` text NOT NULL,
	`list_price` real NOT NULL,
	`list_date` text NOT NULL,
	`off_market_days` integer,
	`sold_price` real,
	`sold_date` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `properties_org_mls_unique` ON `properties` (`organization_id`,`mls_id`);--> statement-breakpoint
CREATE INDEX `properties_org_created_idx` ON `properties` (`organization_id`,`created_at`,`id`,`latitude`,`longitude`,`geo_x`,`geo_y`,`geo_z`);--> statement-breakpoint
CREATE INDEX `properties_org_updated_idx` ON `properties` (`organization_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_price_idx` ON `properties` (`organization_id`,`list_price`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_list_date_idx` ON `properties` (`organization_id`,`list_date`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_status_idx` ON `properties` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_type_idx` ON `properties` (`organization_id`,`property_type`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_city_idx` ON `properties` (`organization_id`,"city" COLLATE NOCASE,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_state_idx` ON `properties` (`organization_id`,"state" COLLATE NOCASE,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_zip_idx` ON `properties` (`organization_id`,`zip_code`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_zip_price_idx` ON `properties` (`organization_id`,`zip_code`,`list_price`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_geo_idx` ON `properties` (`organization_id`,`latitude`,`longitude`,`geo_x`,`geo_y`,`geo_z`,`created_at`,`updated_at`,`list_price`,`list_date`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_sold_idx` ON `properties` (`organization_id`,`status`,`property_type`,`sold_date`);--> statement-breakpoint
CREATE TABLE `property_daily_referrers` (
	`property_id` text NOT NULL,
	`day` text NOT NULL,
	`source` text NOT NULL,
	`views` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`property_id`, `day`, `source`)
);
--> statement-breakpoint
CREATE TABLE `property_daily_stats` (
	`property_id` text NOT NULL,
	`day` text NOT NULL,
	`organization_id` text NOT NULL,
	`views` integer DEFAULT 0 NOT NULL,
	`inquiries` integer DEFAULT 0 NOT NULL,
	`showings` integer DEFAULT 0 NOT NULL,
	`offers` integer DEFAULT 0 NOT NULL,
	`saves` integer DEFAULT 0 NOT NULL,
	`shares` integer DEFAULT 0 NOT NULL,
	`time_on_site_total` integer DEFAULT 0 NOT NULL,
	`time_on_site_count` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`property_id`, `day`)
);
--> statement-breakpoint
CREATE TABLE `property_daily_visitors` (
	`property_id` text NOT NULL,
	`day` text NOT NULL,
	`visitor_hash` text NOT NULL,
	PRIMARY KEY(`property_id`, `day`, `visitor_hash`)
);
--> statement-breakpoint
CREATE TABLE `property_stats` (
	`property_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`views` integer DEFAULT 0 NOT NULL,
	`inquiries` integer DEFAULT 0 NOT NULL,
	`showings` integer DEFAULT 0 NOT NULL,
	`offers` integer DEFAULT 0 NOT NULL,
	`saves` integer DEFAULT 0 NOT NULL,
	`shares` integer DEFAULT 0 NOT NULL,
	`time_on_site_total` integer DEFAULT 0 NOT NULL,
	`time_on_site_count` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `property_valuations` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`property_id` text NOT NULL,
	`created_at` text NOT NULL,
	`body` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `property_valuations_property_idx` ON `property_valuations` (`organization_id`,`property_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `deal_activities` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`deal_id` text NOT NULL,
	`type` text NOT NULL,
	`description` text,
	`user_id` text,
	`metadata` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deal_activities_deal_idx` ON `deal_activities` (`organization_id`,`deal_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `deal_created_rollups` (
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`assigned_to` text NOT NULL,
	`level` integer NOT NULL,
	`bucket` integer NOT NULL,
	`n` integer DEFAULT 0 NOT NULL,
	`value` real DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `type`, `assigned_to`, `level`, `bucket`)
);
--> statement-breakpoint
CREATE TABLE `deal_decided_rollups` (
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`level` integer NOT NULL,
	`bucket` integer NOT NULL,
	`stage` text NOT NULL,
	`assigned_to` text NOT NULL,
	`n` integer DEFAULT 0 NOT NULL,
	`value` real DEFAULT 0 NOT NULL,
	`days` real DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `type`, `level`, `bucket`, `stage`, `assigned_to`)
);
--> statement-breakpoint
CREATE TABLE `deal_documents` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`deal_id` text NOT NULL,
	`name` text NOT NULL,
	`type` text NOT NULL,
	`stage` text,
	`key` text NOT NULL,
	`size` integer NOT NULL,
	`mime_type` text NOT NULL,
	`sha256` text NOT NULL,
	`signed_at` text,
	`uploaded_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deal_documents_deal_idx` ON `deal_documents` (`organization_id`,`deal_id`,`uploaded_at`,`id`);--> statement-breakpoint
CREATE TABLE `deal_stage_changes` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`deal_id` text NOT NULL,
	`from_stage` text,
	`to_stage` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deal_stage_changes_org_to_idx` ON `deal_stage_changes` (`organization_id`,`to_stage`,`at`);--> statement-breakpoint
CREATE INDEX `deal_stage_changes_deal_idx` ON `deal_stage_changes` (`deal_id`,`at`);--> statement-breakpoint
CREATE TABLE `deal_stage_stats` (
	`organization_id` text NOT NULL,
	`stage` text NOT NULL,
	`count` integer DEFAULT 0 NOT NULL,
	`value` real DEFAULT 0 NOT NULL,
	`probability_sum` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `stage`)
);
--> statement-breakpoint
CREATE TABLE `deal_tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`deal_id` text NOT NULL,
	`title` text NOT NULL,
	`description` text,
	`due_date` text,
	`priority` text NOT NULL,
	`assigned_to` text,
	`completed` integer DEFAULT false NOT NULL,
	`completed_at` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deal_tasks_deal_idx` ON `deal_tasks` (`organization_id`,`deal_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `deals` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`title` text NOT NULL,
	`description` text,
	`type` text NOT NULL,
	`stage` text NOT NULL,
	`status` text NOT NULL,
	`amount` real NOT NULL,
	`commission` text,
	`contact_id` text NOT NULL,
	`property_id` text,
	`assigned_to` text,
	`team_members` text NOT NULL,
	`timeline` text,
	`closing_date` text DEFAULT '' NOT NULL,
	`probability` integer NOT NULL,
	`source` text,
	`notes` text,
	`tags` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`last_activity_at` text NOT NULL,
	`closed_at` text,
	`decided_at` text,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deals_org_created_idx` ON `deals` (`organization_id`,`created_at`,`id`,`amount`,`type`,`assigned_to`);--> statement-breakpoint
CREATE INDEX `deals_org_decided_idx` ON `deals` (`organization_id`,`decided_at`,`stage`,`amount`,`assigned_to`,`created_at`,`type`) WHERE "deals"."decided_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `deals_org_updated_idx` ON `deals` (`organization_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_amount_idx` ON `deals` (`organization_id`,`amount`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_closing_idx` ON `deals` (`organization_id`,`closing_date`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_probability_idx` ON `deals` (`organization_id`,`probability`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_stage_idx` ON `deals` (`organization_id`,`stage`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_status_idx` ON `deals` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_type_idx` ON `deals` (`organization_id`,`type`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_assigned_idx` ON `deals` (`organization_id`,`assigned_to`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_contact_idx` ON `deals` (`organization_id`,`contact_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `clickwrap_acceptances` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`agreement_id` text NOT NULL,
	`version_hash` text NOT NULL,
	`subject_ref` text,
	`accepted_at` text NOT NULL,
	`ip` text,
	`user_agent` text
);
--> statement-breakpoint
CREATE INDEX `clickwrap_acceptances_agreement_idx` ON `clickwrap_acceptances` (`organization_id`,`agreement_id`,`accepted_at`,`id`);--> statement-breakpoint
CREATE INDEX `clickwrap_acceptances_subject_idx` ON `clickwrap_acceptances` (`organization_id`,`agreement_id`,`subject_ref`,`accepted_at`);--> statement-breakpoint
CREATE TABLE `clickwrap_agreements` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`key` text NOT NULL,
	`title` text NOT NULL,
	`version_hash` text NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `clickwrap_agreements_org_key_unique` ON `clickwrap_agreements` (`organization_id`,`key`);--> statement-breakpoint
CREATE INDEX `clickwrap_agreements_org_created_idx` ON `clickwrap_agreements` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `clickwrap_versions` (
	`agreement_id` text NOT NULL,
	`version_hash` text NOT NULL,
	`organization_id` text NOT NULL,
	`title` text NOT NULL,
	`body` text NOT NULL,
	`published_at` text NOT NULL,
	`current_since` text NOT NULL,
	PRIMARY KEY(`agreement_id`, `version_hash`)
);
--> statement-breakpoint
CREATE INDEX `clickwrap_versions_history_idx` ON `clickwrap_versions` (`agreement_id`,`current_since`,`version_hash`);--> statement-breakpoint
CREATE TABLE `document_obligations` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`document_id` text NOT NULL,
	`deal_id` text,
	`type` text NOT NULL,
	`description` text,
	`due_date` text NOT NULL,
	`amount_cents` integer,
	`created_at` text NOT NULL,
	`synced_at` text NOT NULL,
	`sync_count` integer DEFAULT 0 NOT NULL,
	`sync_event_id` text,
	`overdue_noted_at` text
);
--> statement-breakpoint
CREATE INDEX `document_obligations_org_due_idx` ON `document_obligations` (`organization_id`,`due_date`,`id`);--> statement-breakpoint
CREATE INDEX `document_obligations_document_idx` ON `document_obligations` (`document_id`);--> statement-breakpoint
CREATE INDEX `document_obligations_overdue_idx` ON `document_obligations` (`due_date`,`id`) WHERE "document_obligations"."deal_id" IS NOT NULL AND "document_obligations"."overdue_noted_at" IS NULL;--> statement-breakpoint
CREATE TABLE `document_vectors` (
	`organization_id` text NOT NULL,
	`id` text NOT NULL,
	`document_id` text NOT NULL,
	`chunk` integer NOT NULL,
	`vector` blob NOT NULL,
	`indexed_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `document_vectors_document_idx` ON `document_vectors` (`organization_id`,`document_id`,`chunk`);--> statement-breakpoint
CREATE TABLE `referral_keys` (
	`organization_id` text NOT NULL,
	`agent_user_id` text NOT NULL,
	`contact_hash` text NOT NULL,
	`referral_id` text NOT NULL,
	`expires_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `agent_user_id`, `contact_hash`)
);
--> statement-breakpoint
CREATE TABLE `referrals` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`agent_user_id` text NOT NULL,
	`referrer_person_id` text,
	`channel` text NOT NULL,
	`status` text NOT NULL,
	`referred_name` text NOT NULL,
	`referred_contact` text,
	`referred_email_key` text,
	`notes` text,
	`reward_type` text,
	`reward_status` text,
	`reward_value` real,
	`lead_contact_id` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `referrals_org_created_idx` ON `referrals` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `referrals_org_status_idx` ON `referrals` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `referrals_org_agent_idx` ON `referrals` (`organization_id`,`agent_user_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `survey_responses` (
	`survey_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`answers` text NOT NULL,
	`submitted_at` text NOT NULL,
	`ip` text,
	`user_agent` text,
	`sentiment` text,
	`sentiment_score` real,
	`sentiment_source` text,
	`analyzed_at` text,
	`testimonial_id` text
);
--> statement-breakpoint
CREATE INDEX `survey_responses_org_idx` ON `survey_responses` (`organization_id`,`submitted_at`);--> statement-breakpoint
CREATE TABLE `survey_templates` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`questions` text NOT NULL,
	`send_delay_hours` integer NOT NULL,
	`is_default` integer NOT NULL,
	`built_in` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `survey_templates_org_created_idx` ON `survey_templates` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `survey_templates_one_default` ON `survey_templates` (`organization_id`) WHERE is_default = 1;--> statement-breakpoint
CREATE TABLE `surveys` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`template_id` text NOT NULL,
	`recipient_person_id` text NOT NULL,
	`agent_user_id` text NOT NULL,
	`deal_id` text,
	`channel` text NOT NULL,
	`trigger` text NOT NULL,
	`status` text NOT NULL,
	`access_token_hash` text NOT NULL,
	`pending_token` text,
	`send_at` text NOT NULL,
	`sent_at` text,
	`opened_at` text,
	`completed_at` text,
	`skipped_at` text,
	`expired_at` text,
	`expires_at` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `surveys_token_unique` ON `surveys` (`access_token_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `surveys_deal_won_unique` ON `surveys` (`organization_id`,`deal_id`) WHERE "trigger" = 'DEAL_WON';--> statement-breakpoint
CREATE INDEX `surveys_org_created_idx` ON `surveys` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `surveys_org_status_idx` ON `surveys` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `surveys_org_agent_idx` ON `surveys` (`organization_id`,`agent_user_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `surveys_due_idx` ON `surveys` (`status`,`send_at`);--> statement-breakpoint
CREATE INDEX `surveys_expiry_idx` ON `surveys` (`status`,`expires_at`);--> statement-breakpoint
CREATE TABLE `erasures` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`actor_user_id` text,
	`erased` text NOT NULL,
	`retained` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `erasures_org_at_idx` ON `erasures` (`organization_id`,`at`,`id`);--> statement-breakpoint
CREATE TABLE `trash_entries` (
	`record_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`kind` text NOT NULL,
	`state` text NOT NULL,
	`label` text,
	`deleted_at` text NOT NULL,
	`deleted_by` text,
	`restorable_until` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE INDEX `trash_entries_org_listed_idx` ON `trash_entries` (`organization_id`,`state`,`deleted_at`,`record_id`);--> statement-breakpoint
CREATE INDEX `trash_entries_org_kind_idx` ON `trash_entries` (`organization_id`,`state`,`kind`,`deleted_at`,`record_id`);--> statement-breakpoint
CREATE INDEX `trash_entries_due_idx` ON `trash_entries` (`restorable_until`) WHERE "trash_entries"."state" IN ('trashed', 'purging');--> statement-breakpoint
CREATE TABLE `trash_rows` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`record_id` text NOT NULL,
	`table_name` text NOT NULL,
	`row` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `trash_rows_record_idx` ON `trash_rows` (`record_id`,`table_name`,`seq`);