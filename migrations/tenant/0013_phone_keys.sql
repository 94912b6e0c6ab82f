ALTER TABLE `contacts` ADD `phone_key` text;--> statement-breakpoint
ALTER TABLE `contacts` ADD `secondary_phone_key` text;--> statement-breakpoint
CREATE INDEX `contacts_org_phone_key_idx` ON `contacts` (`organization_id`,`phone_key`);--> statement-breakpoint
CREATE INDEX `contacts_org_secondary_phone_key_idx` ON `contacts` (`organization_id`,`secondary_phone_key`);--> statement-breakpoint
-- Existing contacts get keys for the numbers SQL can read without libphonenumber (issue 33): "+" and digits as
-- written, or ten digits (or eleven starting with 1) as US numbers, the settings' default region. Anything else stays
-- unkeyed until the contact is next written, which keys it with the organization's region.
UPDATE `contacts` SET
  `phone_key` = (SELECT CASE
      WHEN d IS NULL OR length(d) < 7 OR length(d) > 15 THEN NULL
      WHEN trim(`contacts`.`phone`) LIKE '+%' THEN '+' || d
      WHEN length(d) = 10 AND substr(d, 1, 1) BETWEEN '2' AND '9' THEN '+1' || d
      WHEN length(d) = 11 AND substr(d, 1, 1) = '1' THEN '+' || d
      ELSE NULL END
    FROM (SELECT replace(replace(replace(replace(replace(replace(`contacts`.`phone`, ' ', ''), '(', ''), ')', ''), '-', ''), '.', ''), '+', '') AS d)
    WHERE d GLOB '[0-9]*' AND d NOT GLOB '*[^0-9]*'),
  `secondary_phone_key` = (SELECT CASE
      WHEN d IS NULL OR length(d) < 7 OR length(d) > 15 THEN NULL
      WHEN trim(`contacts`.`secondary_phone`) LIKE '+%' THEN '+' || d
      WHEN length(d) = 10 AND substr(d, 1, 1) BETWEEN '2' AND '9' THEN '+1' || d
      WHEN length(d) = 11 AND substr(d, 1, 1) = '1' THEN '+' || d
      ELSE NULL END
    FROM (SELECT replace(replace(replace(replace(replace(replace(`contacts`.`secondary_phone`, ' ', ''), '(', ''), ')', ''), '-', ''), '.', ''), '+', '') AS d)
    WHERE d GLOB '[0-9]*' AND d NOT GLOB '*[^0-9]*')
WHERE `phone` IS NOT NULL OR `secondary_phone` IS NOT NULL;
