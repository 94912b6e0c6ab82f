DROP INDEX `properties_org_created_idx`;--> statement-breakpoint
CREATE INDEX `properties_org_zip_price_idx` ON `properties` (`organization_id`,`zip_code`,`list_price`,`id`);--> statement-breakpoint
CREATE INDEX `properties_org_created_idx` ON `properties` (`organization_id`,`created_at`,`id`,`latitude`,`longitude`,`geo_x`,`geo_y`,`geo_z`);