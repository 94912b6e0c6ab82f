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
CREATE INDEX `properties_org_created_idx` ON `properties` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_updated_idx` ON `properties` (`organization_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_price_idx` ON `properties` (`organization_id`,`list_price`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_list_date_idx` ON `properties` (`organization_id`,`list_date`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_status_idx` ON `properties` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_type_idx` ON `properties` (`organization_id`,`property_type`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_city_idx` ON `properties` (`organization_id`,"city" COLLATE NOCASE,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_state_idx` ON `properties` (`organization_id`,"state" COLLATE NOCASE,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_zip_idx` ON `properties` (`organization_id`,`zip_code`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_geo_idx` ON `properties` (`organization_id`,`latitude`,`longitude`);--> statement-breakpoint
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
CREATE INDEX `property_valuations_property_idx` ON `property_valuations` (`organization_id`,`property_id`,`created_at`,`id`);